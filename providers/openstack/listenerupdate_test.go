package openstack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// listenerIDs are the IDs of a load balancer's listeners, by key.
func listenerIDs(t *testing.T, c *Cloud, lbID string) map[string]string {
	t.Helper()
	cl, err := c.sess.get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	have, _, err := newLoadBalancers(c).listenersAndPools(context.Background(), cl, lbID, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, h := range have {
		out[listenerKey(h)] = h.ID
	}
	return out
}

// Each change Octavia can make in place is made in place: the listener keeps its ID (the port
// never closes), and only what changed is written, counted at the fake. Before, a change of
// source ranges, nodePort, algorithm or monitor deleted the listener and created it again with
// an inline pool, which Octavia answers 500.
func TestSpecChangesUpdateListenersInPlace(t *testing.T) {
	f := newFake(t, fake.Options{UpdateDelay: 10 * time.Millisecond})
	c := newTestCloud(t, f, "create-monitor = true\n")
	lb := lbOf(t, c)
	nodes := lbNodes("10.0.0.5", "10.0.0.6")
	svc := lbService("web", nil)
	ensureUntilReady(t, lb, svc, nodes)
	lbID := fakeLB(t, f, "web").ID
	ids := listenerIDs(t, c, lbID)
	for _, tc := range []struct {
		name   string
		change func(s *v1.Service)
		ops    []string // the writes, in the fake's names
		check  func(l fake.Listener) bool
	}{
		{"source ranges set", func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"} },
			[]string{"octavia.UpdateListener"}, func(l fake.Listener) bool { return slices.Equal(l.AllowedCIDRs, []string{"192.0.2.0/24"}) }},
		{"source ranges removed", func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = nil },
			[]string{"octavia.UpdateListener"}, func(l fake.Listener) bool { return len(l.AllowedCIDRs) == 0 }},
		{"nodePort changed", func(s *v1.Service) { s.Spec.Ports[0].NodePort = 31080 },
			[]string{"octavia.BatchUpdateMembers", "octavia.UpdateListener"}, func(l fake.Listener) bool { return strings.HasSuffix(l.Members[0], ":31080") }},
		{"lb-method changed", func(s *v1.Service) {
			s.Annotations = map[string]string{"loadbalancer.openstack.org/lb-method": "LEAST_CONNECTIONS"}
		},
			[]string{"octavia.UpdateListener", "octavia.UpdatePool"}, func(l fake.Listener) bool { return l.Method == "LEAST_CONNECTIONS" }},
		{"monitor timing changed", func(s *v1.Service) {
			s.Annotations = map[string]string{"loadbalancer.openstack.org/lb-method": "LEAST_CONNECTIONS", "loadbalancer.openstack.org/health-monitor-delay": "7"}
		}, []string{"octavia.UpdateHealthMonitor"}, func(l fake.Listener) bool { return l.MonitorTiming[0] == 7 }},
	} {
		tc.change(svc)
		before := f.Calls()
		if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var wrote []string
		for op, n := range f.Calls() {
			if n > before[op] && fake.IsWrite(op) {
				wrote = append(wrote, op)
			}
		}
		slices.Sort(wrote)
		if !slices.Equal(wrote, tc.ops) {
			t.Errorf("%s: writes %v, want %v", tc.name, wrote, tc.ops)
		}
		if got := listenerIDs(t, c, lbID); got["TCP/80"] != ids["TCP/80"] {
			t.Errorf("%s: listener %s replaced by %s, want it updated in place", tc.name, ids["TCP/80"], got["TCP/80"])
		}
		if l := fakeLB(t, f, "web").Listeners[0]; !tc.check(l) {
			t.Errorf("%s: listener after the sync: %+v", tc.name, l)
		}
		writes := f.Writes()
		if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
			t.Fatal(err)
		}
		if w := f.Writes() - writes; w != 0 {
			t.Errorf("%s: the next sync made %d writes, want 0", tc.name, w)
		}
	}
}

// A port added to an existing load balancer gets its listener, then its pool, members and
// monitor: the listener POST carries no inline pool (Octavia answers that 500).
func TestPortAddedCreatesListenerThenPool(t *testing.T) {
	f := newFake(t, fake.Options{})
	c := newTestCloud(t, f, "create-monitor = true\n")
	lb := lbOf(t, c)
	nodes := lbNodes("10.0.0.5", "10.0.0.6")
	svc := lbService("web", nil)
	ensureUntilReady(t, lb, svc, nodes)
	svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP})
	before := f.Calls()
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
		t.Fatalf("port added: %v", err)
	}
	for op, want := range map[string]int{"octavia.CreateListener": 1, "octavia.CreatePool": 1, "octavia.BatchUpdateMembers": 1,
		"octavia.CreateHealthMonitor": 1, "octavia.DeleteListener": 0} {
		if n := f.Calls()[op] - before[op]; n != want {
			t.Errorf("%s: %d calls, want %d", op, n, want)
		}
	}
	got := fakeLB(t, f, "web")
	if len(got.Listeners) != 2 {
		t.Fatalf("listeners = %+v", got.Listeners)
	}
	for _, l := range got.Listeners {
		if len(l.Members) != 2 || l.Monitor != "TCP" {
			t.Errorf("listener %d: members %v monitor %q", l.Port, l.Members, l.Monitor)
		}
	}
	writes := f.Writes()
	if _, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
		t.Fatal(err)
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("the next sync made %d writes, want 0", w)
	}
}
