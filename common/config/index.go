package config

import (
	"strings"
)

// iniIndex remembers where each section and key of an INI document stands, so problems can
// name a line. It follows gcfg's syntax closely enough to find places; gcfg itself does the
// real parsing.
type iniIndex []iniEntry

type iniEntry struct {
	line                int
	section, subsection string
	key                 string // "" for a section header
	raw                 string // the whole line
}

func indexINI(src []byte) iniIndex {
	var idx iniIndex
	section, sub := "", ""
	for i, line := range strings.Split(string(src), "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t[0] == ';' || t[0] == '#':
			continue
		case t[0] == '[':
			section, sub = parseHeader(t)
			idx = append(idx, iniEntry{line: i + 1, section: section, subsection: sub, raw: line})
		default:
			key := t
			if eq := strings.IndexByte(t, '='); eq >= 0 {
				key = t[:eq]
			}
			idx = append(idx, iniEntry{line: i + 1, section: section, subsection: sub, key: strings.TrimSpace(key), raw: line})
		}
	}
	return idx
}

func parseHeader(t string) (section, sub string) {
	t = strings.TrimPrefix(t, "[")
	if end := strings.LastIndexByte(t, ']'); end >= 0 {
		t = t[:end]
	}
	name, rest, _ := strings.Cut(strings.TrimSpace(t), " ")
	rest = strings.TrimSpace(rest)
	if len(rest) >= 2 && rest[0] == '"' && rest[len(rest)-1] == '"' {
		rest = strings.ReplaceAll(rest[1:len(rest)-1], `\"`, `"`)
	}
	return name, rest
}

// lineOf finds the line of key in [section "sub"] (the header's line when key is ""). Section
// and key names are case-insensitive in gcfg; '-' and '_' are not told apart here either.
func (idx iniIndex) lineOf(section, sub, key string) int {
	for _, e := range idx {
		if sameName(e.section, section) && e.subsection == sub && sameName(e.key, key) {
			return e.line
		}
	}
	if key != "" { // a key that is not in the file: point at its section
		return idx.lineOf(section, sub, "")
	}
	return 0
}

// LineOf indexes an INI document for a provider that names a line outside a Problem (a
// start-up notice): the returned function is lineOf, 0 when the key is not in the document.
func LineOf(src []byte) func(section, sub, key string) int {
	idx := indexINI(src)
	return func(section, sub, key string) int {
		for _, e := range idx {
			if sameName(e.section, section) && e.subsection == sub && sameName(e.key, key) {
				return e.line
			}
		}
		return 0
	}
}

func sameName(a, b string) bool {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "-") }
	return norm(a) == norm(b)
}

// cutValues finds values that an unquoted ';' or '#' cuts short. gcfg reads everything from
// such a character on as a comment, so `password = ab;cd` silently becomes "ab". A comment
// character right after a non-space character is almost always part of the value. The value is
// never repeated in the message: it may be a password.
func (idx iniIndex) cutValues() []Problem {
	var out []Problem
	for _, e := range idx {
		if e.key == "" {
			continue
		}
		_, value, ok := strings.Cut(e.raw, "=")
		if !ok {
			continue
		}
		if c, at := unquotedComment(value); at > 0 && value[at-1] != ' ' && value[at-1] != '\t' && strings.TrimSpace(value[:at]) != "" {
			out = append(out, Problem{Line: e.line, Section: e.section, Subsection: e.subsection, Key: e.key,
				Msg: "value is cut at an unquoted '" + string(c) + "' (the rest of the line is read as a comment); put the whole value in double quotes"})
		}
	}
	return out
}

// unquotedComment returns the first ';' or '#' outside double quotes and its offset, or -1.
func unquotedComment(v string) (byte, int) {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ';', '#':
			if !quoted {
				return v[i], i
			}
		}
	}
	return 0, -1
}
