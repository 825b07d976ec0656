package openstack

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// repairEvents are the LoadBalancerDriftRepaired Events on svc once the broadcaster had time.
func repairEvents(sink *cloudtest.EventSink, svc *v1.Service) []string {
	time.Sleep(300 * time.Millisecond) // the broadcaster delivers asynchronously
	var out []string
	for _, e := range sink.On(svc) {
		if strings.Contains(e, svcevents.ReasonDriftRepaired) {
			out = append(out, e)
		}
	}
	return out
}

// A Node added or removed changes the members with one write, and is no repair; a member
// removed by hand is, with one write too. Counted at the fake.
func TestNodeChangeIsNotDrift(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "floating-network-id = "+fake.PublicNetworkID)
	sink := cloudtest.NewEventSink()
	stop := make(chan struct{})
	defer close(stop)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	svc := lbService("web", nil)
	nodes := lbNodes("10.0.0.10", "10.0.0.11")
	svc.Status.LoadBalancer = *ensureUntilReady(t, lb, svc, nodes)

	w := f.Writes()
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.10", "10.0.0.11", "10.0.0.12")); err != nil {
		t.Fatal(err)
	}
	if got := f.Writes() - w; got != 1 {
		t.Errorf("a Node added: %d writes, want 1", got)
	}
	if evs := repairEvents(sink, svc); len(evs) != 0 {
		t.Errorf("a Node change was reported as a repair: %q", evs)
	}

	name := "kube_service_" + cluster + "_default_web"
	if !f.RemoveMember(name, 80) {
		t.Fatal("no member to remove")
	}
	w = f.Writes()
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.10", "10.0.0.11", "10.0.0.12")); err != nil {
		t.Fatal(err)
	}
	if got := f.Writes() - w; got != 1 {
		t.Errorf("a member removed by hand: %d writes, want 1", got)
	}
	if evs := repairEvents(sink, svc); len(evs) != 1 || !strings.Contains(evs[0], "members of TCP/80 were changed (2, want 3)") {
		t.Errorf("repair Events = %q, want one about the members", evs)
	}
	if got := len(fakeLB(t, f, "web").Listeners[0].Members); got != 3 {
		t.Errorf("%d members after the repair, want 3", got)
	}
}

// A port added to the Service is its spec's change: the new listener and the security group
// rule for it are no repair.
func TestSpecChangeIsNotDrift(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n"+manageSG)
	sink := cloudtest.NewEventSink()
	stop := make(chan struct{})
	defer close(stop)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	svc := lbService("web", nil)
	nodes := lbNodes("10.0.0.10")
	svc.Status.LoadBalancer = *ensureUntilReady(t, lb, svc, nodes)
	svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	w := f.Writes()
	ensureUntilReady(t, lb, svc, nodes)
	if f.Writes() == w {
		t.Fatal("the new port was not written")
	}
	if evs := repairEvents(sink, svc); len(evs) != 0 {
		t.Errorf("a spec change was reported as a repair: %q", evs)
	}
}

// A Node change that finds the Service's load balancer deleted out of band (the Service has
// an address) creates it again, with the Service's floating IP, and says so.
func TestUpdateRepairsADeletedLoadBalancer(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "floating-network-id = "+fake.PublicNetworkID)
	sink := cloudtest.NewEventSink()
	stop := make(chan struct{})
	defer close(stop)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	svc := lbService("web", nil)
	svc.Status.LoadBalancer = *ensureUntilReady(t, lb, svc, lbNodes("10.0.0.10"))
	addr := svc.Status.LoadBalancer.Ingress[0].IP
	if !f.DeleteLoadBalancerNamed("kube_service_" + cluster + "_default_web") {
		t.Fatal("nothing to delete")
	}
	w := f.Writes()
	err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.10", "10.0.0.11"))
	if err != nil && !isRetry(err) {
		t.Fatal(err)
	}
	if got := f.Writes() - w; got < 1 || got > 2 {
		t.Errorf("%d writes, want the create and the floating IP's association", got)
	}
	st := ensureUntilReady(t, lb, svc, lbNodes("10.0.0.10", "10.0.0.11"))
	if st.Ingress[0].IP != addr {
		t.Errorf("address %s after the repair, want the Service's %s", st.Ingress[0].IP, addr)
	}
	if evs := repairEvents(sink, svc); len(evs) != 1 || !strings.Contains(evs[0], "was deleted; created again") {
		t.Errorf("repair Events = %q, want one saying the load balancer was created again", evs)
	}
	if got := len(fakeLB(t, f, "web").Listeners[0].Members); got != 2 {
		t.Errorf("%d members, want 2", got)
	}
}

// A Node change that reaches a Service after its load balancer was deleted with it (the node
// sync works from the controller's cache) creates nothing.
func TestUpdateAfterDeleteCreatesNothing(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "floating-network-id = "+fake.PublicNetworkID)
	lb := lbOf(t, c)
	svc := lbService("web", nil)
	svc.Status.LoadBalancer = *ensureUntilReady(t, lb, svc, lbNodes("10.0.0.10"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := lb.EnsureLoadBalancerDeleted(context.Background(), cluster, svc)
		if err == nil {
			break
		}
		if !isRetry(err) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w := f.Writes()
	if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.10", "10.0.0.11")); err == nil {
		t.Error("UpdateLoadBalancer of a deleted Service's load balancer succeeded")
	}
	if got := f.Writes() - w; got != 0 || len(f.LoadBalancers()) != 0 {
		t.Errorf("%d writes, %d load balancers after the update, want none", got, len(f.LoadBalancers()))
	}
}
