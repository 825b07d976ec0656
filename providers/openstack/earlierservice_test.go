package openstack

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/servicecontroller"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// A Service deleted while its load balancer stayed (u1), then made again under the same name
// (u2): u2 writes nothing to u1's load balancer, whether it finds it by name (it waits, the
// refusal saying the orphan collection removes it) or by the load-balancer-id copied with the
// Service (refused naming the annotation, not shared); u2's delete completes and leaves it.
// The orphan collection deletes u1's load balancer with its floating IP; then u2 gets its own,
// and its delete leaves nothing.
func TestRecreatedServiceLeavesEarlierOnes(t *testing.T) {
	ctx := context.Background()
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	nodes := lbNodes("10.0.0.5")
	u1 := lbService("web", nil)
	u1.UID = "u1"
	st1 := ensureUntilReady(t, c.lb, u1, nodes)
	earlier := fakeLB(t, f, "web")

	writes := f.Writes()
	copied := lbService("web", map[string]string{annLoadBalancerID: earlier.ID, annLoadBalancerAddress: st1.Ingress[0].IP},
		v1.ServicePort{Name: "alt", Port: 8080, NodePort: 30081, Protocol: v1.ProtocolTCP})
	copied.UID = "u2"
	_, err := c.lb.EnsureLoadBalancer(ctx, cluster, copied, nodes)
	if !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), annLoadBalancerID) || !strings.Contains(err.Error(), "earlier Service") {
		t.Errorf("load-balancer-id copied from the earlier Service: %v, want a refusal naming the annotation and the earlier Service", err)
	}
	u2 := lbService("web", nil)
	u2.UID = "u2"
	if _, err := c.lb.EnsureLoadBalancer(ctx, cluster, u2, nodes); !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), "orphan collection") {
		t.Errorf("the earlier Service's load balancer by name: %v, want a refusal saying the orphan collection deletes it", err)
	}
	if _, exists, err := c.lb.GetLoadBalancer(ctx, cluster, copied); exists || err != nil {
		t.Errorf("GetLoadBalancer of the new Service: exists %v, %v; want false", exists, err)
	}
	for _, svc := range []*v1.Service{copied, u2} {
		if err := c.lb.EnsureLoadBalancerDeleted(ctx, cluster, svc); err != nil {
			t.Errorf("delete of the new Service: %v", err)
		}
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the new Service wrote %d times (%s)", w, f.CallSummary())
	}
	if got := fakeLB(t, f, "web"); got.ID != earlier.ID || len(got.Listeners) != 1 || got.Listeners[0].Port != 80 {
		t.Errorf("the earlier Service's load balancer changed: %+v", got)
	}

	owned, err := c.OwnedLoadBalancers(ctx, cluster)
	if err != nil {
		t.Fatal(err)
	}
	orphans := servicecontroller.FindOrphans(owned, func(ns, name string) *v1.Service {
		if ns == u2.Namespace && name == u2.Name {
			return u2
		}
		return nil
	}, servicecontroller.DefaultClasses())
	if len(orphans) != 1 || orphans[0].ID != earlier.ID || orphans[0].Owner.UID != "u1" {
		t.Fatalf("orphans %+v, want the earlier Service's load balancer", orphans)
	}
	for deadline := 0; ; deadline++ {
		err := c.DeleteOwnedLoadBalancer(ctx, cluster, orphans[0])
		if err == nil {
			break
		}
		if !isRetry(err) || deadline > 100 {
			t.Fatalf("deleting the orphan: %v", err)
		}
	}
	if n, m := len(f.LoadBalancers()), len(f.FloatingIPs()); n != 0 || m != 0 {
		t.Errorf("after the orphan's delete: %d load balancers, %d floating IPs; want none", n, m)
	}

	ensureUntilReady(t, c.lb, u2, nodes)
	if got := fakeLB(t, f, "web"); tagMap(got.Tags)[ownership.ServiceUIDTag] != "u2" {
		t.Errorf("the new Service's load balancer is tagged %v, want its UID", got.Tags)
	}
	deleteUntilDone(t, c.lb, u2)
	if n, m := len(f.LoadBalancers()), len(f.FloatingIPs()); n != 0 || m != 0 {
		t.Errorf("after the new Service's delete: %d load balancers, %d floating IPs; want none", n, m)
	}
}
