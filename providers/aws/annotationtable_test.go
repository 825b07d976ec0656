package aws

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
	if err := annotations.Documented("../../docs/security.md", "aws", os.Getenv("UPDATE_DOCS") != ""); err != nil {
		t.Fatal(err)
	}
}

// Every annotation suffix the package declares (the ann* constants) is in the table: a parser
// cannot read an annotation the table (and so the hostile suite and the docs) does not know.
func TestEveryDeclaredAnnotationHasAReach(t *testing.T) {
	declared, err := reach.Declared(".", "aws", func(name string, v ast.Expr) (string, bool) {
		lit, ok := v.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING || !strings.HasPrefix(name, "ann") || name == "annotationPrefix" {
			return "", false
		}
		suffix, err := strconv.Unquote(lit.Value)
		return annotationPrefix + suffix, err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if missing := annotations.Missing(declared); len(missing) > 0 {
		t.Errorf("declared but not in the annotation table: %v", missing)
	}
	if len(declared) != len(supported) {
		t.Errorf("found %d annotation suffixes in the source, the table has %d under the prefix", len(declared), len(supported))
	}
}

// The parity table of docs/providers/aws.md lists exactly the table's annotations.
func TestParityTableMatchesTheAnnotationTable(t *testing.T) {
	// The source ranges are the core annotation, documented with the spec field.
	if err := annotations.Parity("../../docs/providers/aws.md", "| Annotation | Classic ELB | NLB |", annotationPrefix, sourceranges.Annotation); err != nil {
		t.Error(err)
	}
}
