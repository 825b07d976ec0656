package openstack

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func callsDelta(before, after map[string]int) (total int, by map[string]int) {
	by = map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			by[k] = d
			total += d
		}
	}
	return total, by
}

// Through gophercloud against the fake Octavia: a listing is one call, filtered by this
// cluster's ownership tag (another cluster's load balancer of the same Service name is not
// listed); a delete whose owner the marks no longer prove writes nothing; an orphan's delete
// takes its load balancer and floating IP.
func TestOwnedLoadBalancers(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "")
	a, b := h.NewCloudFor(t, "alpha").(*Cloud), h.NewCloudFor(t, "beta").(*Cloud)
	n1, _ := h.AddInstance(t, "owned-n1")
	nodes := []*v1.Node{n1}
	mk := func(c *Cloud, cluster, name, uid string) {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
		lb, _ := c.LoadBalancer()
		if _, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nodes); err != nil {
			t.Fatal(err)
		}
	}
	mk(a, "alpha", "web", "uid-web")
	mk(a, "alpha", "api", "uid-api")
	mk(b, "beta", "web", "uid-b-web")

	before := h.fake.Calls()
	got, err := a.OwnedLoadBalancers(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	total, by := callsDelta(before, h.fake.Calls())
	if by["octavia.ListLoadBalancers"] != 1 || total != 1 {
		t.Errorf("a listing made %v, want one octavia.ListLoadBalancers", by)
	}
	if len(got) != 2 {
		t.Fatalf("alpha lists %+v, want its two load balancers", got)
	}
	var web, api = got[0], got[1]
	if web.Owner.Name != "web" {
		web, api = api, web
	}
	if web.Owner != (ownership.Identity{Cluster: "alpha", Namespace: "ns", Name: "web", UID: "uid-web"}) || api.Owner.UID != "uid-api" {
		t.Errorf("owners %+v %+v", web.Owner, api.Owner)
	}

	writes := h.fake.Writes()
	replaced := web
	replaced.Owner.UID = "uid-web-again"
	if err := a.DeleteOwnedLoadBalancer(ctx, "alpha", replaced); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("delete with another UID than the marks': %v, want a refusal", err)
	}
	if err := b.DeleteOwnedLoadBalancer(ctx, "beta", web); err == nil {
		t.Error("beta deleted alpha's load balancer")
	}
	if n := h.fake.Writes() - writes; n != 0 {
		t.Errorf("refused deletes made %d writes", n)
	}

	before = h.fake.Calls()
	if err := a.DeleteOwnedLoadBalancer(ctx, "alpha", api); err != nil {
		t.Fatal(err)
	}
	total, by = callsDelta(before, h.fake.Calls())
	t.Logf("deleting one orphan: %d calls %v", total, by)
	if by["octavia.DeleteLoadBalancer"] != 1 {
		t.Errorf("delete calls %v, want one octavia.DeleteLoadBalancer", by)
	}
	left, err := a.OwnedLoadBalancers(ctx, "alpha")
	if err != nil || len(left) != 1 || left[0].Owner.Name != "web" {
		t.Errorf("after the delete alpha lists %+v (%v)", left, err)
	}
	if lbs, _ := b.OwnedLoadBalancers(ctx, "beta"); len(lbs) != 1 {
		t.Errorf("beta lists %+v, want its one load balancer", lbs)
	}
}

// An orphan's delete looked at again while Octavia deletes it: its cascade delete drops the
// tags before the load balancer is gone (seen on Octavia 11), so the marks cannot prove
// anything then. That look is a RetryError and writes nothing, never a refusal; once it is
// gone, nil.
func TestOwnedDeleteWhilePendingDelete(t *testing.T) {
	ctx := context.Background()
	h := newHarnessWith(t, "", fake.Options{UpdateDelay: 400 * time.Millisecond})
	a := h.NewCloudFor(t, cluster).(*Cloud)
	n1, _ := h.AddInstance(t, "owned-n1")
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-web"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	lb, _ := a.LoadBalancer()
	ensureUntilReady(t, lb, svc, []*v1.Node{n1})
	owned, err := a.OwnedLoadBalancers(ctx, cluster)
	if err != nil || len(owned) != 1 {
		t.Fatalf("owned: %+v %v", owned, err)
	}
	if err := a.DeleteOwnedLoadBalancer(ctx, cluster, owned[0]); !isRetry(err) {
		t.Fatalf("first delete = %v, want a RetryError (being deleted)", err)
	}
	writes := h.fake.Writes()
	if err := a.DeleteOwnedLoadBalancer(ctx, cluster, owned[0]); !isRetry(err) {
		t.Errorf("a look while PENDING_DELETE (tags gone) = %v, want a RetryError", err)
	}
	if w := h.fake.Writes() - writes; w != 0 {
		t.Errorf("the look made %d writes", w)
	}
	time.Sleep(500 * time.Millisecond)
	if err := a.DeleteOwnedLoadBalancer(ctx, cluster, owned[0]); err != nil {
		t.Errorf("once gone: %v, want nil", err)
	}
}
