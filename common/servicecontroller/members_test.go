package servicecontroller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
)

// Every provider call gets a member slice of its own: a provider that sorts or filters it in
// place cannot race another call, nor change what the next call is given.
func TestEachProviderCallHasItsOwnSlice(t *testing.T) {
	a, b := lbService("a"), lbService("bb")
	h := newHarness(t, DefaultClasses(), a, b, node("n1"))
	for _, s := range []*v1.Service{a, b} {
		if err := h.sync(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.client.CoreV1().Nodes().Create(context.Background(), node("n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitForNodes(2)
	if err := h.c.syncNodes(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls", sorted(h.cloud.takeCalls()), []string{"ensure ns/a n1", "ensure ns/bb n1", "update ns/a n1,n2", "update ns/bb n1,n2"})
	seen := map[**v1.Node]bool{}
	for _, p := range h.cloud.slices {
		if seen[p] {
			t.Fatalf("two provider calls were given the same member slice (%d calls)", len(h.cloud.slices))
		}
		seen[p] = true
	}
	if len(seen) != 4 {
		t.Errorf("%d distinct slices, want 4", len(seen))
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// A Node added while a member pass runs reaches every load balancer updated after it: each
// update reads the member set at its own time. The load balancer updated before it gets it
// from the next pass, which updates nothing else.
func TestMembersAreCurrentAtEachWrite(t *testing.T) {
	a, b := lbService("a"), lbService("bb")
	h := newHarness(t, DefaultClasses(), a, b, node("n1"))
	for _, s := range []*v1.Service{a, b} {
		if err := h.sync(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if _, err := h.client.CoreV1().Nodes().Create(ctx, node("n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitForNodes(2)
	h.cloud.takeCalls()
	var once sync.Once
	h.cloud.onUpdate = func() {
		once.Do(func() { // the slow first write of a pass: a Node joins meanwhile
			if _, err := h.client.CoreV1().Nodes().Create(ctx, node("n3"), metav1.CreateOptions{}); err != nil {
				t.Error(err)
			}
			h.waitForNodes(3)
		})
	}
	if err := h.c.syncNodes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	calls := h.cloud.takeCalls()
	if len(calls) != 2 || !strings.HasSuffix(calls[0], " n1,n2") || !strings.HasSuffix(calls[1], " n1,n2,n3") {
		t.Fatalf("calls %q: want the first with n1,n2 (its set when it began) and the second with n1,n2,n3", calls)
	}
	first := strings.Fields(calls[0])[1]
	if err := h.c.syncNodes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	eq(t, "calls of the next pass", h.cloud.takeCalls(), []string{"update " + first + " n1,n2,n3"})
}

// A Service whose type left LoadBalancer has its load balancer deleted even when this process
// never synced it (still queued at 10,000 Services, or synced before a restart), as the
// library does. Another class's Service is not touched.
func TestTypeChangeOfAServiceNotSyncedHereDeletes(t *testing.T) {
	mine := lbService("web")
	theirs := lbService("theirs", withClass("other.io/lb"))
	h := newHarness(t, DefaultClasses(), mine, theirs, node("n1"))
	h.cloud.lbs["ns/web"], h.cloud.lbs["ns/theirs"] = []string{"n1"}, []string{"n1"}
	h.drain()
	ctx := context.Background()
	for _, s := range []*v1.Service{mine, theirs} {
		cur := s.DeepCopy()
		cur.Spec.Type, cur.Spec.LoadBalancerClass = v1.ServiceTypeClusterIP, nil // the API server clears the class
		if _, err := h.client.CoreV1().Services("ns").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		h.waitFor(s, func(s *v1.Service) bool { return s.Spec.Type == v1.ServiceTypeClusterIP })
	}
	for _, s := range []*v1.Service{mine, theirs} {
		if err := h.sync(s); err != nil {
			t.Fatal(err)
		}
	}
	eq(t, "cloud calls", h.cloud.takeCalls(), []string{"get ns/web", "delete ns/web"})
	eq(t, "events", h.takeEvents(), []string{"Normal DeletingLoadBalancer Deleting load balancer", "Normal DeletedLoadBalancer Deleted load balancer"})
	if err := h.sync(mine); err != nil { // again: nothing left, nothing recorded
		t.Fatal(err)
	}
	eq(t, "calls of a second sync", h.cloud.takeCalls(), nil)
}

func TestPassDue(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := time.Second
	for _, c := range []struct {
		first, last, want time.Duration
	}{
		{0, 0, s}, // one change: quiet after it
		{0, 300 * time.Millisecond, 1300 * time.Millisecond},
		{0, 9500 * time.Millisecond, 10 * s}, // a trickle: no later than 10 quiet periods after the first
		{0, 30 * s, 10 * s},
	} {
		if got := passDue(t0.Add(c.first), t0.Add(c.last), s).Sub(t0); got != c.want {
			t.Errorf("passDue(%v, %v) = %v, want %v", c.first, c.last, got, c.want)
		}
	}
}

// Eight Nodes registered 50 ms apart cost each load balancer one update with a 200 ms quiet
// period; without one (the library's behaviour) each change starts a pass.
func TestNodeBurstCostsOneUpdatePerLoadBalancer(t *testing.T) {
	for _, c := range []struct {
		delay   time.Duration
		atLeast int
		atMost  int
	}{
		{200 * time.Millisecond, 1, 1},
		{0, 2, 8},
	} {
		t.Run(c.delay.String(), func(t *testing.T) {
			a, b := lbService("a"), lbService("bb")
			h := newHarnessWith(t, Options{Classes: DefaultClasses(), NodeSyncDelay: c.delay}, a, b, node("n0"))
			for _, s := range []*v1.Service{a, b} {
				if err := h.sync(s); err != nil {
					t.Fatal(err)
				}
			}
			h.drain()
			h.cloud.takeCalls()
			h.run(2)
			ctx := context.Background()
			for i := 1; i <= 8; i++ {
				if _, err := h.client.CoreV1().Nodes().Create(ctx, node(fmt.Sprintf("n%d", i)), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			all := "n0,n1,n2,n3,n4,n5,n6,n7,n8"
			h.waitCalls("update with every Node", func(s string) bool { return s == "update ns/a "+all })
			h.waitCalls("update with every Node", func(s string) bool { return s == "update ns/bb "+all })
			time.Sleep(3 * c.delay) // a late pass would show
			per := map[string]int{}
			for _, call := range h.cloud.takeCalls() {
				if f := strings.Fields(call); f[0] == "update" {
					per[f[1]]++
				}
			}
			for _, lb := range []string{"ns/a", "ns/bb"} {
				if per[lb] < c.atLeast || per[lb] > c.atMost {
					t.Errorf("%s: %d updates for 8 Nodes, want %d..%d", lb, per[lb], c.atLeast, c.atMost)
				}
			}
		})
	}
}

// The library's metric names count what a member pass does: an update per stale load
// balancer, a failure of one, and the pass's latency.
func TestLibraryMetrics(t *testing.T) {
	a := lbService("a")
	h := newHarness(t, DefaultClasses(), a, node("n1"))
	if err := h.sync(a); err != nil {
		t.Fatal(err)
	}
	syncs, errs := counter(t, loadBalancerSyncCount), counter(t, nodeSyncErrorCount)
	passes, _ := testutil.GetHistogramMetricCount(nodeSyncLatency.ObserverMetric)
	ctx := context.Background()
	if _, err := h.client.CoreV1().Nodes().Create(ctx, node("n2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitForNodes(2)
	if err := h.c.syncNodes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if d := counter(t, loadBalancerSyncCount) - syncs; d != 1 {
		t.Errorf("service_controller_loadbalancer_sync_total went up by %v, want 1", d)
	}
	if n, _ := testutil.GetHistogramMetricCount(nodeSyncLatency.ObserverMetric); n != passes+1 {
		t.Errorf("service_controller_nodesync_latency_seconds has %d samples, want %d", n, passes+1)
	}
	h.cloud.updateErr = errors.New("cloud down")
	if _, err := h.client.CoreV1().Nodes().Create(ctx, node("n3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitForNodes(3)
	if err := h.c.syncNodes(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if d := counter(t, nodeSyncErrorCount) - errs; d != 1 {
		t.Errorf("service_controller_nodesync_error_total went up by %v, want 1", d)
	}
}

func counter(t *testing.T, c *metrics.Counter) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
