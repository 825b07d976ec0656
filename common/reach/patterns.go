package reach

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"sync"
)

// MaxInst bounds a compiled pattern's program: matching costs time in proportion to it, and
// a pattern within MaxPattern bytes can still expand (x{1000}) past any sane size.
const MaxInst = 5000

// maxCached bounds the cache: when full it starts again, so a tenant writing new patterns
// costs one compile each, never memory.
const maxCached = 512

// Patterns compiles Pattern values once per value: a resync of many Services naming the same
// expression compiles it once.
type Patterns struct {
	mu sync.Mutex
	m  map[string]compiled
}

type compiled struct {
	re  *regexp.Regexp
	err error
}

// NewPatterns is an empty cache.
func NewPatterns() *Patterns { return &Patterns{m: map[string]compiled{}} }

// Compile returns expr compiled, or a refusal naming annotation when it is longer than
// MaxPattern, is not a valid expression, or compiles to more than MaxInst instructions.
func (p *Patterns) Compile(annotation, expr string) (*regexp.Regexp, error) {
	if len(expr) > MaxPattern {
		return nil, Refuse(annotation, "the pattern is %d bytes, more than the %d accepted", len(expr), MaxPattern)
	}
	re, err := p.Regexp(expr)
	if err != nil {
		return nil, Refuse(annotation, "%v", err)
	}
	return re, nil
}

// Regexp is Compile for an expression that is not an annotation's value as written (a config
// value's, or one a provider derives from a glob, up to four times longer): the error says
// why, the caller names the field.
func (p *Patterns) Regexp(expr string) (*regexp.Regexp, error) {
	if len(expr) > 4*MaxPattern {
		return nil, fmt.Errorf("the pattern is %d bytes, more than the %d accepted", len(expr), 4*MaxPattern)
	}
	p.mu.Lock()
	c, ok := p.m[expr]
	p.mu.Unlock()
	if ok {
		return c.re, c.err
	}
	c.re, c.err = compileBounded(expr)
	p.mu.Lock()
	if len(p.m) >= maxCached {
		p.m = map[string]compiled{}
	}
	p.m[expr] = c
	p.mu.Unlock()
	return c.re, c.err
}

// compileBounded measures the program before building the matcher.
func compileBounded(expr string) (*regexp.Regexp, error) {
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return nil, err
	}
	if n := len(prog.Inst); n > MaxInst {
		return nil, &tooLarge{n: n}
	}
	return regexp.Compile(expr)
}

type tooLarge struct{ n int }

func (e *tooLarge) Error() string {
	return fmt.Sprintf("the pattern compiles to %d instructions, more than the %d accepted; write a simpler expression", e.n, MaxInst)
}
