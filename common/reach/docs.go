package reach

import (
	"fmt"
	"os"
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
