package annotations

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
	if err := Table.Documented("../../../../docs/security.md", "aws", os.Getenv("UPDATE_DOCS") != ""); err != nil {
		t.Fatal(err)
	}
}

// Every annotation suffix the package declares (its exported string constants but Prefix and
// TrafficPort) is in the table: a parser cannot read an annotation the table (and so the
// hostile suite and the docs) does not know. The provider's package declares none of its own
// (no ann* constant): it reads the annotations through this package.
func TestEveryDeclaredAnnotationHasAReach(t *testing.T) {
	declared, err := reach.Declared(".", "annotations", func(name string, v ast.Expr) (string, bool) {
		if !ast.IsExported(name) || name == "Prefix" || name == "TrafficPort" {
			return "", false
		}
		return suffixConstant(v)
	})
	if err != nil {
		t.Fatal(err)
	}
	if missing := Table.Missing(declared); len(missing) > 0 {
		t.Errorf("declared but not in the annotation table: %v", missing)
	}
	if len(declared) != len(Supported) {
		t.Errorf("found %d annotation suffixes in the source, the table has %d under the prefix", len(declared), len(Supported))
	}
	inProvider, err := reach.Declared("../..", "aws", func(name string, v ast.Expr) (string, bool) {
		if !strings.HasPrefix(name, "ann") {
			return "", false
		}
		return suffixConstant(v)
	})
	if err != nil || len(inProvider) > 0 {
		t.Errorf("the provider's package declares annotation suffixes %v (%v); declare them here, with a rule", inProvider, err)
	}
}

// suffixConstant is the annotation named by a constant whose value is a string literal (a
// suffix after Prefix).
func suffixConstant(v ast.Expr) (string, bool) {
	lit, ok := v.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	suffix, err := strconv.Unquote(lit.Value)
	return Prefix + suffix, err == nil
}

// The parity table of docs/providers/aws.md lists exactly the table's annotations.
func TestParityTableMatchesTheAnnotationTable(t *testing.T) {
	// The source ranges are the core annotation, documented with the spec field.
	if err := Table.Parity("../../../../docs/providers/aws.md", "| Annotation | Classic ELB | NLB |", Prefix, sourceranges.Annotation); err != nil {
		t.Error(err)
	}
}
