// Package config reads provider config files strictly.
//
// The upstream providers read their INI files with gcfg and drop what gcfg could not place
// (gcfg.FatalOnly), so a misspelled key is silently ignored. Here every unknown section or key,
// every value gcfg cannot parse and every value cut short by an unquoted ';' or '#' is a
// Problem naming the section, the key and the line.
package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a config file.
type Problem struct {
	Line       int    // 1-based; 0 when the problem is not tied to a line (e.g. a missing key)
	Section    string // as written in the file, e.g. "Global"
	Subsection string // e.g. the host in [VirtualCenter "host"]
	Key        string
	Msg        string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Section != "" {
		b.WriteString("[" + p.Section)
		if p.Subsection != "" {
			fmt.Fprintf(&b, " %q", p.Subsection)
		}
		b.WriteString("] ")
	}
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error is the list of every problem found in one file.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	if len(lines) == 1 {
		return "invalid config: " + lines[0]
	}
	return fmt.Sprintf("invalid config (%d problems):\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// Problems collects problems; its zero value is ready to use.
type Problems []Problem

// Add records a problem not tied to a line; ReadINI fills in the line where the key appears.
func (ps *Problems) Add(section, key, format string, args ...any) {
	*ps = append(*ps, Problem{Section: section, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// AddSub is Add for a key in a named subsection such as [VirtualCenter "host"].
func (ps *Problems) AddSub(section, subsection, key, format string, args ...any) {
	*ps = append(*ps, Problem{Section: section, Subsection: subsection, Key: key, Msg: fmt.Sprintf(format, args...)})
}

// Err returns nil when there are no problems, else an *Error.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: ps}
}
