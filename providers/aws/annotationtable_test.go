package aws

import (
	"context"
	"go/ast"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

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

// spec.loadBalancerIP and sessionAffinity ClientIP are refused before any write, naming the
// field, for both load balancer types.
func TestUnsupportedSpecRefused(t *testing.T) {
	h := newHarness(t, "spec")
	lb, _ := h.cloud(t, "").LoadBalancer()
	nodes := []*v1.Node{node(h, "spec-a")}
	for _, typ := range []string{"", "nlb"} {
		for field, mutate := range map[string]func(*v1.Service){
			"spec.loadBalancerIP":  func(s *v1.Service) { s.Spec.LoadBalancerIP = "203.0.113.9" }, //nolint:staticcheck // the field refused
			"spec.sessionAffinity": func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP },
		} {
			svc := lbService("s", map[string]string{annotationPrefix + annType: typ})
			mutate(svc)
			w := h.fake.Writes()
			_, err := lb.EnsureLoadBalancer(context.Background(), "x", svc, nodes)
			if err == nil || !strings.Contains(err.Error(), field) || h.fake.Writes() != w {
				t.Errorf("type %q, %s: %v, %d writes; want a refusal naming the field and none", typ, field, err, h.fake.Writes()-w)
			}
		}
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
