package openstack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// Which unmarked listeners on the Service's own load balancer a CCM made (taken over or
// replaced) and which were made by hand (left alone), by description and name.
func TestMadeByACCM(t *testing.T) {
	id := ownership.Identity{Cluster: "c1", Namespace: "ns", Name: "web", UID: "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"}
	under := ownership.Identity{Cluster: "my_cluster", Namespace: "ns", Name: "web", UID: "u1"}
	long := strings.Repeat("x", 250)
	for _, tc := range []struct {
		name     string
		id       ownership.Identity
		lbName   string
		listener listeners.Listener
		want     bool
	}{
		{"an earlier ccm's description", id, testLBName, listeners.Listener{Description: "ccm:abc"}, true},
		{"ccm's name, description lost", id, testLBName, listeners.Listener{Name: "listener_TCP_80", Protocol: "TCP", ProtocolPort: 80}, true},
		{"ccm's name for another port", id, testLBName, listeners.Listener{Name: "listener_TCP_81", Protocol: "TCP", ProtocolPort: 80}, false},
		{"upstream's name", id, testLBName, listeners.Listener{Name: "listener_2_" + testLBName}, true},
		{"upstream's early order", id, testLBName, listeners.Listener{Name: "listener_" + testLBName + "_2"}, true},
		{"upstream's name under the early load balancer name", id, testLBName, listeners.Listener{Name: "listener_0_a0b1c2d3e4f5061728394a5b6c7d8e9f"}, true},
		{"upstream's literal name, a cluster with _", under, "kube_service_hashed", listeners.Listener{Name: "listener_0_kube_service_my_cluster_ns_web"}, true},
		{"upstream's name cut to 255", ownership.Identity{Cluster: "c1", Namespace: "ns", Name: long}, "kube_service_c1_ns_" + long,
			listeners.Listener{Name: ("listener_0_kube_service_c1_ns_" + long)[:255]}, true},
		{"another load balancer's upstream name", id, testLBName, listeners.Listener{Name: "listener_0_" + otherLBName}, false},
		{"a prefix of the name, not cut", id, testLBName, listeners.Listener{Name: "listener_0_kube_service_c1"}, false},
		{"no index", id, testLBName, listeners.Listener{Name: "listener_x_" + testLBName}, false},
		{"a user's name", id, testLBName, listeners.Listener{Name: "https"}, false},
		{"no name, no description", id, testLBName, listeners.Listener{}, false},
	} {
		if got := madeByACCM(tc.id, tc.lbName, tc.listener); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A listener someone added by hand on a Service's own load balancer (no ownership mark, no
// CCM's name or tag) is left alone: not deleted, not changed, one Warning naming it (advice:
// not repeated at every sync). A Service port it holds is an error naming the port, and
// still nothing is deleted.
func TestHandMadeListenerLeftAlone(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n")
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lb := lbOf(t, c)
	svc, nodes := lbService("web", nil), lbNodes("10.0.0.5")
	ensureUntilReady(t, lb, svc, nodes)
	f.AddListener(fakeLB(t, f, "web").ID, "", "TCP", 443, "10.0.9.9")
	hand := func() *fake.Listener {
		for _, l := range fakeLB(t, f, "web").Listeners {
			if l.Port == 443 {
				return &l
			}
		}
		return nil
	}
	before := *hand()

	ensureUntilReady(t, lb, svc, nodes)
	if got := hand(); got == nil || got.Method != before.Method || len(got.Members) != 1 || got.Description != "" {
		t.Fatalf("the hand-made listener: %+v, want it as it was (%+v)", got, before)
	}
	if found, evs := sink.Await(svc, 2*time.Second, v1.EventTypeWarning, reasonListenerLeft, `"users-TCP-443"`, "TCP/443"); !found {
		t.Errorf("no %s Warning naming the listener: %q", reasonListenerLeft, evs)
	}
	writes := f.Writes()
	ensureUntilReady(t, lb, svc, nodes)
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("a sync with the hand-made listener there made %d writes: %s", w, f.CallSummary())
	}

	// The Service now asks for the port the listener holds.
	svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
	if err == nil || isRetry(err) || !strings.Contains(err.Error(), "port TCP/443") || !strings.Contains(err.Error(), "users-TCP-443") {
		t.Errorf("a Service port held by the hand-made listener: %v, want an error naming the port and the listener", err)
	}
	if n := f.Calls()["octavia.DeleteListener"]; n != 0 || hand() == nil {
		t.Errorf("%d listener deletes, hand-made listener %+v: want it kept", n, hand())
	}
	if sink.Writes() == 0 {
		t.Error("no Events recorded")
	}
	var warnings int
	for _, e := range sink.On(svc) {
		if strings.Contains(e, reasonListenerLeft) {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d %s Warnings, want 1 (advice, once)", warnings, reasonListenerLeft)
	}
}
