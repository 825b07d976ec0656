// Command codeshape measures the shape of the Go code: how long its functions are (funclen)
// and how many files a reader passes through to follow one call path (follow). See README.md.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage:
  codeshape funclen [-max 100] DIR...
  codeshape follow -pkg DIR -from Type.Method|func [-resolve types|names] [-tree]
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run returns the exit status: 0 when all is well, 1 when funclen finds a long function,
// 2 when the command cannot do its work.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "funclen":
		return funclenCommand(args[1:], stdout, stderr)
	case "follow":
		return followCommand(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "codeshape: unknown command %q\n%s", args[0], usage)
	return 2
}
