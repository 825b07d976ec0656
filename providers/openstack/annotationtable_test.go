package openstack

import (
	"go/ast"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/common/sourceranges"
)

// Every annotation the provider reads has a reach (an annotation added without one fails
// here), and docs/security.md holds the table as generated from it.
func TestAnnotationTableDocumented(t *testing.T) {
	if err := annotations.Documented("../../docs/security.md", "openstack", os.Getenv("UPDATE_DOCS") != ""); err != nil {
		t.Fatal(err)
	}
}

// Every annotation key the package declares is in the table: a parser cannot read an
// annotation the table (and so the hostile suite and the docs) does not know.
func TestEveryDeclaredAnnotationHasAReach(t *testing.T) {
	declared, err := reach.Declared(".", "openstack", func(_ string, v ast.Expr) (string, bool) {
		k, ok := annotationKey(v)
		return k, ok && k != annPrefix
	})
	if err != nil {
		t.Fatal(err)
	}
	if missing := annotations.Missing(declared); len(missing) > 0 {
		t.Errorf("declared but not in the annotation table: %v", missing)
	}
	if len(declared) < len(annotations)-2 {
		t.Errorf("found %d annotation keys in the source, the table has %d: the scan misses some", len(declared), len(annotations))
	}
}

// annotationKey is the value of a constant written as annPrefix + "x" or as a literal with an
// annotation prefix.
func annotationKey(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BinaryExpr:
		if id, ok := e.X.(*ast.Ident); ok && id.Name == "annPrefix" {
			if lit, ok := e.Y.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				return annPrefix + s, err == nil
			}
		}
	case *ast.BasicLit:
		if s, err := strconv.Unquote(e.Value); err == nil && e.Kind == token.STRING &&
			(strings.HasPrefix(s, annPrefix) || strings.HasPrefix(s, "service.beta.kubernetes.io/")) {
			return s, true
		}
	}
	return "", false
}

// The annotation table of docs/providers/openstack.md lists exactly the table's annotations.
func TestParityTableMatchesTheAnnotationTable(t *testing.T) {
	// The source ranges are the core annotation, documented with the spec field.
	if err := annotations.Parity("../../docs/providers/openstack.md", "| Annotation | Supported | Meaning |", "", sourceranges.Annotation); err != nil {
		t.Error(err)
	}
}
