package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
)

// longFunc is a function whose declaration spans more lines than allowed.
type longFunc struct {
	path  string
	line  int
	name  string
	lines int
}

func (f longFunc) String() string {
	return fmt.Sprintf("%s:%d: %s %d lines", f.path, f.line, f.name, f.lines)
}

func funclenCommand(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("funclen", flag.ContinueOnError)
	flags.SetOutput(stderr)
	limit := flags.Int("max", 100, "the most lines a function may span, from its func line to its closing brace")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	found, err := longFuncs(flags.Args(), *limit)
	if err != nil {
		fmt.Fprintf(stderr, "codeshape funclen: %v\n", err)
		return 2
	}
	for _, f := range found {
		fmt.Fprintln(stdout, f)
	}
	if len(found) > 0 {
		return 1
	}
	return 0
}

// skippedDir says whether funclen leaves out a directory below one it was given, by the
// directory's name. Left out are what the go tool ignores (testdata, names starting with "."
// or "_") and the stand-ins for a cloud that only tests and benches run: the fakes ("fake" and
// every name starting with it: openstack's internal/fake, aws's internal/fakeaws) and the
// simulators ("sim", vSphere's internal/sim, and names ending in "-sim", the cmd/NAME-sim
// programs). common/simcontrol, the protocol the simulators and the fault harness share,
// is checked: its name is neither "sim" nor ends in "-sim".
func skippedDir(name string) bool {
	return name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		strings.HasPrefix(name, "fake") || name == "sim" || strings.HasSuffix(name, "-sim")
}

// longFuncs lists the functions and methods of the non-test Go files under dirs that span
// more than limit lines, in the order of the files' paths and of the functions in each file.
func longFuncs(dirs []string, limit int) ([]longFunc, error) {
	var found []longFunc
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if path != dir && skippedDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			found = append(found, longFuncsIn(fset, path, f, limit)...)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}

// longFuncsIn counts a function from the line of its func keyword to the line of its closing
// brace, both included (the doc comment is not counted), as the commit messages count them.
func longFuncsIn(fset *token.FileSet, path string, f *ast.File, limit int) []longFunc {
	var found []longFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start := fset.Position(fd.Pos()).Line
		lines := fset.Position(fd.End()).Line - start + 1
		if lines > limit {
			found = append(found, longFunc{path: path, line: start, name: funcName(fd), lines: lines})
		}
	}
	return found
}
