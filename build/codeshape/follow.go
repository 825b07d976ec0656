package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// fileReach is what a walk read in one file.
type fileReach struct {
	file      string
	functions int // the functions of the file the walk reached
	entered   int // how often the reading position moved into the file, by a call or a return
}

// reach is what following a call path from one function takes.
type reach struct {
	files     []fileReach // in the order the walk first reached them
	functions int
	// returns counts the times the reading position, back from a callee, lands in a file other
	// than the one it was just in: each is a return to a file the reader had left.
	returns int
}

// walker reads the call graph depth first, each function's calls in source order. A function
// is read at its first call only: a later call to it is not followed again, the reader knows
// it already.
type walker struct {
	read   map[*function]bool
	at     string // the file the reading position is in
	index  map[string]int
	reach  reach
	tree   io.Writer // when not nil, each function read, indented by its depth
	indent int
}

func follow(root *function, tree io.Writer) reach {
	w := &walker{read: map[*function]bool{}, index: map[string]int{}, tree: tree}
	w.visit(root)
	return w.reach
}

func (w *walker) visit(fn *function) {
	w.read[fn] = true
	w.reach.functions++
	if w.tree != nil {
		fmt.Fprintf(w.tree, "%s%s (%s)\n", strings.Repeat("  ", w.indent), fn.name, fn.file)
	}
	if _, ok := w.index[fn.file]; !ok {
		w.index[fn.file] = len(w.reach.files)
		w.reach.files = append(w.reach.files, fileReach{file: fn.file})
	}
	w.reach.files[w.index[fn.file]].functions++
	w.moveTo(fn.file)
	w.indent++
	for _, callee := range fn.callees {
		if w.read[callee] {
			continue
		}
		w.visit(callee)
		if w.at != fn.file {
			w.reach.returns++
			w.moveTo(fn.file)
		}
	}
	w.indent--
}

func (w *walker) moveTo(file string) {
	if w.at != file {
		w.at = file
		w.reach.files[w.index[file]].entered++
	}
}

func followCommand(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("follow", flag.ContinueOnError)
	flags.SetOutput(stderr)
	dir := flags.String("pkg", ".", "the directory of the package")
	from := flags.String("from", "", "the function to start from: Type.Method or func")
	resolve := flags.String("resolve", resolveTypes, "how x.m(...) is resolved: types (the type checker's method) or names (the package's only method named m)")
	tree := flags.Bool("tree", false, "print each function read, indented by call depth")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if *from == "" || flags.NArg() != 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	if *resolve != resolveTypes && *resolve != resolveNames {
		fmt.Fprintf(stderr, "codeshape follow: -resolve %q: want %s or %s\n", *resolve, resolveTypes, resolveNames)
		return 2
	}
	pkg, err := loadPackage(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "codeshape follow: %v\n", err)
		return 2
	}
	root, ok := callGraph(pkg, *resolve)[*from]
	if !ok {
		fmt.Fprintf(stderr, "codeshape follow: %s declares no function %s in its non-test files\n", *dir, *from)
		return 2
	}
	var treeOut io.Writer
	if *tree {
		treeOut = stdout
	}
	printReach(stdout, *from, follow(root, treeOut))
	return 0
}

func printReach(out io.Writer, from string, r reach) {
	fmt.Fprintf(out, "%s: %d files reached, %d returns to a file already left, %d functions\n",
		from, len(r.files), r.returns, r.functions)
	fmt.Fprintf(out, "%9s %8s  %s\n", "functions", "entered", "file")
	for _, f := range r.files {
		fmt.Fprintf(out, "%9d %8d  %s\n", f.functions, f.entered, f.file)
	}
}
