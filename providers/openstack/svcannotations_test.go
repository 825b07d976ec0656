package openstack

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	osfake "github.com/ccm-project/ccm/providers/openstack/internal/fake"
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

// The load-balancer-id ccm writes is a record, not a request to share: when the load balancer
// it names is deleted out of band, the next sync makes the Service's own again (a repair), where
// a request naming a missing load balancer is still refused.
func TestRecordedLoadBalancerDeletedIsRepaired(t *testing.T) {
	f := newFake(t, osfake.Options{})
	c := newTestCloud(t, f, "floating-network-id = "+osfake.PublicNetworkID)
	lb := lbOf(t, c)
	svc := lbService("web", nil)
	svc.Status.LoadBalancer = *ensureUntilReady(t, lb, svc, lbNodes("10.0.0.10"))
	old := fakeLB(t, f, "web").ID
	svc.Annotations = map[string]string{annLoadBalancerID: old, annLoadBalancerAddress: svc.Status.LoadBalancer.Ingress[0].IP}
	if !recordedLoadBalancer(svc) {
		t.Fatal("the annotations ccm writes are not recognised as its record")
	}
	if !f.DeleteLoadBalancerNamed("kube_service_" + cluster + "_default_web") {
		t.Fatal("nothing to delete")
	}
	ensureUntilReady(t, lb, svc, lbNodes("10.0.0.10", "10.0.0.11"))
	if now := fakeLB(t, f, "web"); now.ID == old || len(now.Listeners) != 1 || len(now.Listeners[0].Members) != 2 {
		t.Errorf("after the repair: %+v (old ID %s)", now, old)
	}

	ask := lbService("asks", map[string]string{annLoadBalancerID: old}) // no address: a request
	if recordedLoadBalancer(ask) {
		t.Fatal("a request to share is taken for a record")
	}
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, ask, lbNodes("10.0.0.10")); !errors.Is(err, errNamedMissing) {
		t.Errorf("a Service naming a missing load balancer: %v, want %v", err, errNamedMissing)
	}
}

func TestRecordedLoadBalancer(t *testing.T) {
	with := func(ann map[string]string, ips ...string) *v1.Service {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, v1.LoadBalancerIngress{IP: ip})
		}
		return s
	}
	const id = "3f2a1b4c-5d6e-4f70-8192-a3b4c5d6e7f8"
	for _, tc := range []struct {
		name string
		svc  *v1.Service
		want bool
	}{
		{"both, address served", with(map[string]string{annLoadBalancerID: id, annLoadBalancerAddress: "203.0.113.7"}, "203.0.113.7"), true},
		{"both, the second address served", with(map[string]string{annLoadBalancerID: id, annLoadBalancerAddress: "fd00::7"}, "203.0.113.7", "fd00::7"), true},
		{"id only", with(map[string]string{annLoadBalancerID: id}, "203.0.113.7"), false},
		{"address not served", with(map[string]string{annLoadBalancerID: id, annLoadBalancerAddress: "203.0.113.8"}, "203.0.113.7"), false},
		{"no status yet", with(map[string]string{annLoadBalancerID: id, annLoadBalancerAddress: "203.0.113.7"}), false},
		{"address only", with(map[string]string{annLoadBalancerAddress: "203.0.113.7"}, "203.0.113.7"), false},
		{"not an address", with(map[string]string{annLoadBalancerID: id, annLoadBalancerAddress: "lb.example.com"}, "203.0.113.7"), false},
	} {
		if got := recordedLoadBalancer(tc.svc); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
