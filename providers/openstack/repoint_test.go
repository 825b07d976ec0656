package openstack

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// listenerPorts are the ports of the fake load balancer lbID's listeners.
func listenerPorts(t *testing.T, f *fake.Cloud, lbID string) []int {
	t.Helper()
	var out []int
	for _, l := range fakeLBByID(t, f, lbID).Listeners {
		out = append(out, l.Port)
	}
	return out
}

// load-balancer-id set on a Service that has its own load balancer, naming one it may share:
// the Service stays on its own (same address), nothing is written to the one named, and a
// LoadBalancerIDNotApplied Warning names the annotation. Deleting the Service with the
// annotation still set deletes its own load balancer and floating IP; the other stays whole.
func TestRepointKeepsOwnLoadBalancer(t *testing.T) {
	f := newFake(t, fake.Options{})
	lb, sink := migrationCloud(t, f, "")
	nodes := lbNodes("10.0.0.5")
	api := lbService("api", nil)
	apiSt := ensureUntilReady(t, lb, api, nodes)
	apiLB := fakeLB(t, f, "api")
	web := lbService("web", nil, v1.ServicePort{Name: "alt", Port: 8080, NodePort: 30081, Protocol: v1.ProtocolTCP})
	st := ensureUntilReady(t, lb, web, nodes)
	web.Status.LoadBalancer = *st
	own := fakeLB(t, f, "web")

	web.Annotations = map[string]string{annLoadBalancerID: apiLB.ID}
	if got := ensureUntilReady(t, lb, web, nodes); got.Ingress[0].IP != st.Ingress[0].IP {
		t.Errorf("after the re-point the Service is at %s, want its own %s", got.Ingress[0].IP, st.Ingress[0].IP)
	}
	if ports, tags := listenerPorts(t, f, apiLB.ID), fakeLBByID(t, f, apiLB.ID).Tags; !slices.Equal(ports, []int{80}) || !slices.Equal(tags, apiLB.Tags) {
		t.Errorf("the load balancer named has listeners %v and tags %v, want only its owner's", ports, tags)
	}
	if ok, evs := sink.Await(web, 5*time.Second, reasonLoadBalancerIDNotApplied, annLoadBalancerID); !ok {
		t.Errorf("no %s Warning naming the annotation: %q", reasonLoadBalancerIDNotApplied, evs)
	}

	deleteUntilDone(t, lb, web)
	for _, l := range f.LoadBalancers() {
		if l.ID == own.ID {
			t.Errorf("the Service's own load balancer outlived its delete")
		}
	}
	if fips := f.FloatingIPs(); len(fips) != 1 || fips[0].Address != apiSt.Ingress[0].IP || fips[0].PortID == "" {
		t.Errorf("floating IPs %+v, want the other Service's only, still associated", fips)
	}
	if ports := listenerPorts(t, f, apiLB.ID); !slices.Equal(ports, []int{80}) {
		t.Errorf("the other Service's load balancer has listeners %v after the delete, want [80]", ports)
	}
}

// load-balancer-id removed from a Service that shared another's load balancer: the Service
// gets its own, and its listener and name leave the shared one.
func TestUnsharedServiceLeavesTheSharedLoadBalancer(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	nodes := lbNodes("10.0.0.5")
	api := lbService("api", nil)
	apiSt := ensureUntilReady(t, c.lb, api, nodes)
	apiLB := fakeLB(t, f, "api")
	web := lbService("web", map[string]string{annLoadBalancerID: apiLB.ID}, v1.ServicePort{Name: "alt", Port: 8080, NodePort: 30081, Protocol: v1.ProtocolTCP})
	st := ensureUntilReady(t, c.lb, web, nodes)
	if st.Ingress[0].IP != apiSt.Ingress[0].IP || !slices.Equal(listenerPorts(t, f, apiLB.ID), []int{80, 8080}) {
		t.Fatalf("sharing: address %v, listeners %v", st.Ingress, listenerPorts(t, f, apiLB.ID))
	}
	web.Status.LoadBalancer = *st

	delete(web.Annotations, annLoadBalancerID)
	if got := ensureUntilReady(t, c.lb, web, nodes); got.Ingress[0].IP == apiSt.Ingress[0].IP {
		t.Errorf("without the annotation the Service is still at the shared address %s", got.Ingress[0].IP)
	}
	shared := fakeLBByID(t, f, apiLB.ID)
	if ports := listenerPorts(t, f, apiLB.ID); !slices.Equal(ports, []int{80}) || !slices.Equal(shared.Tags, apiLB.Tags) {
		t.Errorf("the shared load balancer keeps listeners %v and tags %v, want its owner's only", ports, shared.Tags)
	}
	if own := fakeLB(t, f, "web"); !slices.Equal(listenerPorts(t, f, own.ID), []int{8080}) {
		t.Errorf("the Service's own load balancer has listeners %v", listenerPorts(t, f, own.ID))
	}
}

// load-balancer-id naming a load balancer the Service may not use, set after the Service got
// its own: the sync is refused, and the Service's own load balancer still exists for the
// service controller (GetLoadBalancer), so that deleting the Service deletes it.
func TestRefusedLoadBalancerIDStillDeletesOwn(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "")
	nodes := lbNodes("10.0.0.5")
	foreign := f.AddLoadBalancer("hand-made")
	web := lbService("web", nil)
	web.Status.LoadBalancer = *ensureUntilReady(t, c.lb, web, nodes)
	web.Annotations = map[string]string{annLoadBalancerID: foreign}
	if _, err := c.lb.EnsureLoadBalancer(context.Background(), cluster, web, nodes); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("Ensure naming a load balancer not allowed: %v, want a refusal", err)
	}
	if _, exists, err := c.lb.GetLoadBalancer(context.Background(), cluster, web); !exists || err != nil {
		t.Fatalf("GetLoadBalancer: exists %v, %v; want the Service's own", exists, err)
	}
	deleteUntilDone(t, c.lb, web)
	if lbs, fips := f.LoadBalancers(), f.FloatingIPs(); len(lbs) != 1 || lbs[0].ID != foreign || len(fips) != 0 {
		t.Errorf("after the delete: load balancers %+v, floating IPs %+v; want the hand-made one only", lbs, fips)
	}
}
