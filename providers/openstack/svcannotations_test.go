package openstack

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAnnotationPatch(t *testing.T) {
	svc := func(ann map[string]string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", Annotations: ann}}
	}
	for _, c := range []struct {
		name string
		svc  *v1.Service
		id   string
		addr string
		want string
	}{
		{"none yet", svc(nil), "lb1", "203.0.113.7",
			`{"metadata":{"annotations":{"loadbalancer.openstack.org/load-balancer-address":"203.0.113.7","loadbalancer.openstack.org/load-balancer-id":"lb1"},"uid":"u1"}}`},
		{"both there (upstream wrote them)", svc(map[string]string{annLoadBalancerID: "lb1", annLoadBalancerAddress: "203.0.113.7"}), "lb1", "203.0.113.7", ""},
		{"address edited by a tenant", svc(map[string]string{annLoadBalancerID: "lb1", annLoadBalancerAddress: "10.0.0.1"}), "lb1", "203.0.113.7",
			`{"metadata":{"annotations":{"loadbalancer.openstack.org/load-balancer-address":"203.0.113.7"},"uid":"u1"}}`},
		{"no address yet: only the id", svc(nil), "lb1", "",
			`{"metadata":{"annotations":{"loadbalancer.openstack.org/load-balancer-id":"lb1"},"uid":"u1"}}`},
	} {
		if got := string(annotationPatch(c.svc, c.id, c.addr)); got != c.want {
			t.Errorf("%s: patch %s, want %s", c.name, got, c.want)
		}
	}
}

// The patch reaches the API (a fake clientset here) and a second call with the annotations in
// place writes nothing; without a client (before Initialize) nothing is written.
func TestAnnotateWritesOnlyWhatIsMissing(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1"}}
	cs := fake.NewClientset(svc.DeepCopy())
	if err := (&serviceAnnotator{}).annotate(context.Background(), svc, "lb1", "203.0.113.7"); err != nil {
		t.Fatalf("without a client: %v", err)
	}
	a := &serviceAnnotator{client: cs}
	if err := a.annotate(context.Background(), svc, "lb1", "203.0.113.7"); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Services("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Annotations[annLoadBalancerID] != "lb1" || got.Annotations[annLoadBalancerAddress] != "203.0.113.7" {
		t.Errorf("annotations after the patch: %v", got.Annotations)
	}
	n := len(cs.Actions())
	if err := a.annotate(context.Background(), got, "lb1", "203.0.113.7"); err != nil {
		t.Fatal(err)
	}
	if len(cs.Actions()) != n {
		t.Errorf("a Service that has both annotations was patched again: %v", cs.Actions()[n:])
	}
}
