package openstack

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// A load balancer that goes to ERROR while it serves the Service (its floating IP, or its VIP
// for an internal one, is in the Service's status) is kept: no delete, no write, an error for
// the back-off and a Warning saying how to fail it over. It keeps its address.
func TestErrorWhileServingIsKept(t *testing.T) {
	for _, internal := range []bool{false, true} {
		f := newFake(t, fake.Options{})
		c := newTestCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n")
		sink, stop := newSink(t)
		c.Initialize(sink, stop)
		lb := lbOf(t, c)
		svc := lbService("web", nil)
		if internal {
			svc.Annotations = map[string]string{annInternal: "true"}
		}
		nodes := lbNodes("10.0.0.5")
		st := ensureUntilReady(t, lb, svc, nodes)
		svc.Status.LoadBalancer = *st
		name := "kube_service_" + cluster + "_default_web"
		if !f.SetLoadBalancerError(name) {
			t.Fatal("no load balancer to put in ERROR")
		}
		writes, deletes := f.Writes(), f.Calls()["octavia.DeleteLoadBalancer"]
		for _, sync := range []func() error{
			func() error { _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); return err },
			func() error {
				return lb.UpdateLoadBalancer(context.Background(), cluster, svc, lbNodes("10.0.0.5", "10.0.0.6"))
			},
		} {
			err := sync()
			if err == nil || isRetry(err) || !strings.Contains(err.Error(), "ERROR") {
				t.Errorf("internal %v: sync of a serving load balancer in ERROR = %v, want an error (not a planned re-check) naming ERROR", internal, err)
			}
		}
		if w := f.Writes() - writes; w != 0 || f.Calls()["octavia.DeleteLoadBalancer"] != deletes {
			t.Errorf("internal %v: %d writes (%s), want none", internal, w, f.CallSummary())
		}
		if got := fakeLB(t, f, "web"); got.Status != "ERROR" {
			t.Errorf("internal %v: load balancer %s, want it kept in ERROR", internal, got.Status)
		}
		found, evs := sink.Await(svc, 2*time.Second, v1.EventTypeWarning, "LoadBalancerError")
		if !found || !strings.Contains(strings.Join(evs, "\n"), "openstack loadbalancer failover") {
			t.Errorf("internal %v: no LoadBalancerError Warning naming the failover; Events %q", internal, evs)
		}
	}
}
