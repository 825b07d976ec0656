// Package resolve holds calls that follow resolves one way or the other, or not at all.
package resolve

import "strings"

type store struct {
	c *cache
	s snap
	shower
	embedded
}

type shower interface{ show() }

type celsius float64

func Root(st store, err error, f func()) {
	st.c.get()      // cache.get by its type; "get" names two methods
	st.show()       // through an interface: view.show by its name only
	_ = err.Error() // through an interface: myErr.Error by its name only
	f()             // a function value: never followed
	g := st.s.get   // a method value is not a call
	g()
	func() { helper() }() // a function literal's calls are its function's
	apply[int](1)
	box[int]{}.open()
	st.promoted() // embedded.promoted, through the embedded field
	_ = strings.ToUpper("x")
	_ = len("x")
	_ = celsius(1)
	view.show(view{}) // a method expression: view.show by its type too
}

func helper() {}
