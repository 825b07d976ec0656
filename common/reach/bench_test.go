package reach

import (
	"regexp"
	"strings"
	"testing"
)

// hostilePattern is a floating-subnet expression of about 8.8 KB whose repetitions expand as it
// compiles: what a tenant could make every sync compile before patterns were bounded.
var hostilePattern = strings.Repeat("(a|b|c){1,99}", 680)

// The cost of one hostile value, unbounded (regexp.Compile, what a sync paid before) and
// through Patterns.Compile (refused by its size before any parsing).
// go test -run '^$' -bench Pattern -benchmem ./common/reach/
func BenchmarkPatternUnbounded(b *testing.B) {
	for range b.N {
		_, _ = regexp.Compile(hostilePattern)
	}
}

func BenchmarkPatternRefused(b *testing.B) {
	p := NewPatterns()
	for range b.N {
		if _, err := p.Compile("x", hostilePattern); err == nil {
			b.Fatal("accepted")
		}
	}
}

// The worst a value within the bounds costs: the largest program MaxInst admits, compiled
// once and then served from the cache.
func BenchmarkPatternWithinBounds(b *testing.B) {
	expr := strings.Repeat("(a|b){1,9}", 40) // 400 bytes, close to MaxInst
	p := NewPatterns()
	if _, err := p.Compile("x", expr); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := p.Compile("x", expr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPatternWithinBoundsFirst(b *testing.B) {
	expr := strings.Repeat("(a|b){1,9}", 40)
	for range b.N {
		if _, err := compileBounded(expr); err != nil {
			b.Fatal(err)
		}
	}
}
