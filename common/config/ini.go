package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
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
// The error, if any, is an *Error listing every problem of the file, found in one reading: a
// value gcfg cannot parse stops gcfg, so its line is left out and the file read again (see
// readAll), and the config is validated even when keys are unknown. A validation problem of a
// key whose value could not be parsed is left out: it would only repeat that problem.
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
	var unparsed []Problem
	halfRead := false
	if len(src) > 0 {
		var read []Problem
		read, unparsed, halfRead = readAll(into, src, idx)
		problems = append(problems, read...)
	}
	if v, ok := into.(Validator); ok && !halfRead {
		for _, p := range v.Validate() {
			if p.Line == 0 {
				p.Line = idx.lineOf(p.Section, p.Subsection, p.Key)
			}
			if !sameKeyAsAny(p, unparsed) {
				problems = append(problems, p)
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return (&Error{Problems: problems}).sorted()
}

// maxUnparsed bounds how many unparseable values one reading reports (each costs a re-read).
const maxUnparsed = 100

// readAll reads src into into and returns every problem gcfg reports, the ones among them that
// stopped it (unparsed: their lines were blanked and the file read again), and whether into may
// be half-read (a problem without a line stopped gcfg, or there were too many). Rounds read
// into a fresh value of into's type, so a multi-valued key is not read twice into into.
func readAll(into any, src []byte, idx iniIndex) (problems, unparsed []Problem, halfRead bool) {
	lines := bytes.Split(src, []byte("\n"))
	for range maxUnparsed {
		_, fatal := gcfgSplit(gcfg.ReadInto(freshLike(into), bytes.NewReader(bytes.Join(lines, []byte("\n")))), idx)
		if fatal == nil || fatal.Line < 1 || fatal.Line > len(lines) {
			break
		}
		unparsed = append(unparsed, *fatal)
		lines[fatal.Line-1] = nil
	}
	warns, fatal := gcfgSplit(gcfg.ReadInto(into, bytes.NewReader(bytes.Join(lines, []byte("\n")))), idx)
	problems = append(append(problems, unparsed...), warns...)
	if fatal != nil {
		problems = append(problems, *fatal)
	}
	return problems, unparsed, fatal != nil
}

// freshLike returns a new value of into's type (a pointer to a struct) with its defaults.
func freshLike(into any) any {
	v := reflect.New(reflect.TypeOf(into).Elem()).Interface()
	if d, ok := v.(Defaulter); ok {
		d.SetDefaults()
	}
	return v
}

// sameKeyAsAny reports whether p is about the key of one of ps.
func sameKeyAsAny(p Problem, ps []Problem) bool {
	for _, q := range ps {
		if q.Key != "" && sameName(p.Section, q.Section) && p.Subsection == q.Subsection && sameName(p.Key, q.Key) {
			return true
		}
	}
	return false
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

// gcfgSplit turns gcfg's errors into Problems: the warnings (unknown sections and keys) and
// the fatal error that stopped the reading, if any. gcfg names the place (section, subsection,
// variable) but not the line, so the line comes from our own index of the file.
func gcfgSplit(err error, idx iniIndex) (warns []Problem, fatal *Problem) {
	if err == nil {
		return nil, nil
	}
	var errs []error
	var list warnings.List
	if errors.As(err, &list) {
		errs = list.Warnings
		if list.Fatal != nil {
			p := toProblem(list.Fatal.Error(), idx)
			fatal = &p
		}
	} else {
		p := toProblem(err.Error(), idx)
		return nil, &p
	}
	// gcfg reads the file in two passes and reports an unknown section once per key in it.
	seen := map[Problem]bool{}
	for _, e := range errs {
		if p := toProblem(e.Error(), idx); !seen[p] {
			seen[p] = true
			warns = append(warns, p)
		}
	}
	return warns, fatal
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
