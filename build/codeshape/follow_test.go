package main

import (
	"bytes"
	"testing"
)

func TestFollow(t *testing.T) {
	for _, tc := range []struct {
		pkg, from, resolve string
		want               string // the -tree output and the summary
	}{
		{
			pkg: "walk", from: "Root", resolve: "types",
			want: `Root (a.go)
  b1 (b.go)
  a2 (a.go)
  b2 (b.go)
    a3 (a.go)
    c1 (c.go)
      c2 (c.go)
  a4 (a.go)
    b3 (b.go)
Root: 3 files reached, 5 returns to a file already left, 9 functions
functions  entered  file
        4        5  a.go
        3        5  b.go
        2        1  c.go
`,
		},
		{
			// b1, read at Root's first call above, is read here from c1, in c.go's middle.
			pkg: "walk", from: "b2", resolve: "types",
			want: `b2 (b.go)
  a3 (a.go)
  c1 (c.go)
    b1 (b.go)
    c2 (c.go)
b2: 3 files reached, 3 returns to a file already left, 5 functions
functions  entered  file
        2        4  b.go
        1        1  a.go
        2        2  c.go
`,
		},
		{
			pkg: "resolve", from: "Root", resolve: "types",
			want: `Root (root.go)
  cache.get (types.go)
  helper (root.go)
  apply (generic.go)
  box.open (generic.go)
  embedded.promoted (types.go)
  view.show (types.go)
Root: 3 files reached, 5 returns to a file already left, 7 functions
functions  entered  file
        2        6  root.go
        3        3  types.go
        2        2  generic.go
`,
		},
		{
			pkg: "resolve", from: "Root", resolve: "names",
			want: `Root (root.go)
  view.show (types.go)
  myErr.Error (types.go)
  helper (root.go)
  apply (generic.go)
  box.open (generic.go)
  embedded.promoted (types.go)
Root: 3 files reached, 5 returns to a file already left, 7 functions
functions  entered  file
        2        6  root.go
        3        3  types.go
        2        2  generic.go
`,
		},
	} {
		var stdout, stderr bytes.Buffer
		args := []string{"follow", "-pkg", "testdata/follow/" + tc.pkg, "-from", tc.from, "-resolve", tc.resolve, "-tree"}
		if status := run(args, &stdout, &stderr); status != 0 || stdout.String() != tc.want {
			t.Errorf("%q: status %d, printed\n%swant status 0 and\n%s(stderr: %s)", args, status, stdout.String(), tc.want, stderr.String())
		}
	}
}
