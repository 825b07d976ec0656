// Package walk is a call graph across three files for follow's walk.
package walk

func Root() {
	b1()
	a2()
	b1() // read already: not followed again
	b2()
	a4()
}

func a2() {}

func a3() {}

// a4 calls into b.go: the return from b3 lands in a.go, and a4's own return stays there.
func a4() { b3() }

func unreached() { c1() }
