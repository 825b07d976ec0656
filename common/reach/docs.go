package reach

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Markdown is the table's section of docs/security.md: every annotation with its reach and
// the check it gets. Providers test that the docs hold it verbatim.
func (t Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| annotation | reach | check |\n|---|---|---|\n")
	for _, k := range Kinds {
		for _, a := range t {
			if a.Reach != k {
				continue
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a.Name, a.reachText(), a.checkText())
		}
	}
	return b.String()
}

func (a Annotation) reachText() string {
	if a.Reach != Object {
		return string(a.Reach)
	}
	s := "names " + a.Object
	if a.List {
		s += " (a list)"
	}
	return s
}

func (a Annotation) checkText() string {
	var s string
	switch a.Reach {
	case Object:
		s = "used when its tags prove it is this Service's"
		switch {
		case a.Untagged:
			s = "used only when the operator allowed it (by namespace or ID)"
		case a.Cluster:
			s = "used when tagged for this cluster or proven this Service's, or allowed by the operator (by namespace or ID)"
		default:
			s += ", or allowed by the operator (by namespace or ID)"
		}
	case NodePort:
		s = "only the Service's own nodePorts and health-check nodePort"
	case Ranges:
		s = fmt.Sprintf("normalised (IPv4-mapped, zones refused), at most %d", MaxRanges)
	case Pattern:
		s = fmt.Sprintf("at most %d bytes and %d compiled instructions, compiled once", MaxPattern, MaxInst)
	case Text:
		s = fmt.Sprintf("at most %d bytes", a.Limit())
	case Setting:
		s = "parsed against its fixed values"
	}
	if a.Check != "" {
		s += "; " + a.Check
	}
	return s
}

// Embed puts section between the markers of provider's table in doc ("<!-- reach:aws:begin"
// up to its line end, and "<!-- reach:aws:end -->"): it returns the new doc, and whether the
// doc held that section already. A doc without the markers is an error.
func Embed(doc, provider, section string) (string, bool, error) {
	begin, end := "<!-- reach:"+provider+":begin", "<!-- reach:"+provider+":end -->"
	i := strings.Index(doc, begin)
	if i < 0 {
		return "", false, fmt.Errorf("no %q marker", begin)
	}
	i += strings.Index(doc[i:], "\n") + 1
	j := strings.Index(doc, end)
	if j < i {
		return "", false, fmt.Errorf("no %q marker after %q", end, begin)
	}
	return doc[:i] + section + doc[j:], doc[i:j] == section, nil
}

// Documented checks that the doc at path holds the table's section for provider (Embed), and
// with update rewrites it when it does not. The error says how to regenerate it.
func (t Table) Documented(path, provider string, update bool) error {
	if err := t.Validate(); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc, same, err := Embed(string(data), provider, t.Markdown())
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case same:
		return nil
	case update:
		return os.WriteFile(path, []byte(doc), 0o644)
	}
	return fmt.Errorf("the annotation table of %s is out of date; run UPDATE_DOCS=1 go test -run TestAnnotationTableDocumented .", path)
}

// ParityNames reads the annotation names of a provider doc's parity table: the rows after the
// header line starting with header, until the first line that is not a row; each row's first
// cell lists names in backticks, where "`-x`" after "`a-b-c`" is shorthand for the longest
// prefix of a-b-c (on "-") that makes a name the table has ("connection-draining-enabled",
// "-timeout"). prefix is put before every name (AWS writes suffixes). Pure.
func (t Table) ParityNames(doc, header, prefix string) ([]string, error) {
	doc = "\n" + doc
	i := strings.Index(doc, "\n"+header)
	if i < 0 {
		return nil, fmt.Errorf("no parity table headed %q", header)
	}
	var out []string
	lines := strings.Split(doc[i+1:], "\n")
	for _, line := range lines[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		cell := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
		first := ""
		for j, part := range strings.Split(cell, "`") {
			if j%2 == 0 || part == "" {
				continue
			}
			if strings.HasPrefix(part, "spec.") || strings.ContainsAny(part, "* :=") {
				continue // a field, a wildcard or a value, not an annotation
			}
			name := part
			switch {
			case strings.HasPrefix(part, "-") && first != "":
				name = t.expand(prefix, first, part)
			case !strings.Contains(part, "/") && strings.Contains(first, "/"):
				name = first[:strings.LastIndex(first, "/")+1] + part // "`a.org/x`, `y`"
			case first == "":
				first = part
			}
			out = append(out, prefix+strings.TrimPrefix(name, prefix))
		}
	}
	return out, nil
}

// expand is the shorthand "-x" after the name first: the longest prefix of first that names an
// annotation of the table with x.
func (t Table) expand(prefix, first, short string) string {
	segs := strings.Split(first, "-")
	for n := len(segs) - 1; n > 0; n-- {
		if name := strings.Join(segs[:n], "-") + short; t.has(prefix + name) {
			return name
		}
	}
	return short
}

func (t Table) has(name string) bool { _, ok := t.Lookup(name); return ok }

// Parity checks that the parity table headed header in the doc at path lists exactly the
// table's annotations (ParityNames, ParityMatches).
func (t Table) Parity(path, header, prefix string, skip ...string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	names, err := t.ParityNames(string(doc), header, prefix)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := t.ParityMatches(names, skip...); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ParityMatches checks that the parity table lists exactly the table's annotations (besides
// those in skip: rows a doc keeps for annotations of other controllers, or the table's that
// its provider doc describes elsewhere).
func (t Table) ParityMatches(names []string, skip ...string) error {
	listed := map[string]bool{}
	var extra, missing []string
	for _, n := range names {
		listed[n] = true
		if !t.has(n) && !slices.Contains(skip, n) {
			extra = append(extra, n)
		}
	}
	for _, a := range t {
		if !listed[a.Name] && !slices.Contains(skip, a.Name) {
			missing = append(missing, a.Name)
		}
	}
	if len(extra)+len(missing) > 0 {
		return fmt.Errorf("the parity table lists %v, which the annotation table lacks, and lacks %v", extra, missing)
	}
	return nil
}
