package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/gcfg.v1"
	"gopkg.in/warnings.v0"
)

// Defaulter is implemented by config structs that set their defaults before the file is read.
type Defaulter interface{ SetDefaults() }

// Validator is implemented by config structs that check themselves after reading. Problems
// without a line get the line of their key in the file, if it is there.
type Validator interface{ Validate() Problems }

// ReadINI applies defaults to into, reads the gcfg/INI document from r strictly and validates
// the result. r may be nil (no --cloud-config): then only defaults and validation apply.
// The error, if any, is an *Error listing every problem.
func ReadINI(r io.Reader, into any) error {
	if d, ok := into.(Defaulter); ok {
		d.SetDefaults()
	}
	var src []byte
	if r != nil {
		var err error
		if src, err = io.ReadAll(r); err != nil {
			return fmt.Errorf("reading config: %w", err)
		}
	}
	idx := indexINI(src)
	problems := idx.cutValues()
	if len(src) > 0 {
		problems = append(problems, gcfgProblems(gcfg.ReadInto(into, bytes.NewReader(src)), idx)...)
	}
	if len(problems) > 0 {
		// Validating a half-read config would only add noise to the real problems.
		return (&Error{Problems: problems}).sorted()
	}
	if v, ok := into.(Validator); ok {
		vp := v.Validate()
		for i := range vp {
			if vp[i].Line == 0 {
				vp[i].Line = idx.lineOf(vp[i].Section, vp[i].Subsection, vp[i].Key)
			}
		}
		return vp.Err()
	}
	return nil
}

func (e *Error) sorted() error {
	ps := e.Problems
	for i := 1; i < len(ps); i++ { // insertion sort: lists are short and this keeps it stable
		for j := i; j > 0 && ps[j].Line < ps[j-1].Line; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	return e
}

var (
	locRE    = regexp.MustCompile(`section "([^"]*)"(?:, subsection "([^"]*)")?(?:, variable "([^"]*)")?`)
	posRE    = regexp.MustCompile(`^(\d+):\d+: (.*)$`)
	quotedRE = regexp.MustCompile(`"[^"]*"`)
)

// gcfgProblems turns gcfg's errors into Problems. gcfg names the place (section, subsection,
// variable) but not the line, so the line comes from our own index of the file.
func gcfgProblems(err error, idx iniIndex) []Problem {
	if err == nil {
		return nil
	}
	var errs []error
	var list warnings.List
	if errors.As(err, &list) {
		errs = append(errs, list.Warnings...)
		if list.Fatal != nil {
			errs = append(errs, list.Fatal)
		}
	} else {
		errs = []error{err}
	}
	// gcfg reads the file in two passes and reports an unknown section once per key in it.
	var out []Problem
	seen := map[Problem]bool{}
	for _, e := range errs {
		if p := toProblem(e.Error(), idx); !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func toProblem(msg string, idx iniIndex) Problem {
	if m := posRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Msg: m[2]}
	}
	m := locRE.FindStringSubmatch(msg)
	if m == nil {
		return Problem{Msg: msg}
	}
	p := Problem{Section: m[1], Subsection: m[2], Key: m[3], Line: idx.lineOf(m[1], m[2], m[3])}
	what := strings.TrimSpace(msg[:strings.Index(msg, m[0])])
	switch {
	case strings.HasPrefix(msg, "can't store data") && p.Key != "":
		p.Msg = "unknown key (check the spelling; see the provider's config reference)"
	case strings.HasPrefix(msg, "can't store data") && p.Subsection != "":
		p.Msg = "this section takes no name in quotes, or is unknown"
	case strings.HasPrefix(msg, "can't store data"):
		p.Msg = "unknown section"
	default:
		// gcfg quotes the raw value in parse errors; it may be a password, so it goes.
		p.Msg = quotedRE.ReplaceAllString(strings.TrimSuffix(what, " at"), "the value")
	}
	return p
}
