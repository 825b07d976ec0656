package reach

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strings"
)

// Declared scans the non-test Go files of package pkg in dir for constant and variable
// declarations and returns, by name, the annotation key that key reads from each one's value
// (key returns false for those that are not annotation keys). A provider's test checks each
// against its table, so a parser cannot read an annotation the table does not know.
func Declared(dir, pkg string, key func(name string, value ast.Expr) (string, bool)) (map[string]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, f := range pkgs[pkg].Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, v := range vs.Values {
					if k, ok := key(vs.Names[i].Name, v); ok {
						out[vs.Names[i].Name] = k
					}
				}
			}
			return true
		})
	}
	return out, nil
}

// Missing are the declared keys (Declared) the table lacks, as "name (key)", sorted.
func (t Table) Missing(declared map[string]string) []string {
	var out []string
	for name, k := range declared {
		if _, ok := t.Lookup(k); !ok {
			out = append(out, name+" ("+k+")")
		}
	}
	slices.Sort(out)
	return out
}
