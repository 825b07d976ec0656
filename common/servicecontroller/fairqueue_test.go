package servicecontroller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// servedHarness has n Services synced by the controller (as after a first pass), their
// initial queue entries dropped, and a cloud that answers in delay.
func servedHarness(t *testing.T, n int, delay time.Duration) *harness {
	t.Helper()
	objs := []runtime.Object{node("n1")}
	for i := range n {
		objs = append(objs, lbService(fmt.Sprintf("svc-%02d", i)))
	}
	h := newHarness(t, DefaultClasses(), objs...)
	for i := range n {
		if err := h.c.syncService(context.Background(), fmt.Sprintf("ns/svc-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n { // the resync queues only what the informer shows served
		h.waitFor(lbService(fmt.Sprintf("svc-%02d", i)), servicehelper.HasLBFinalizer)
	}
	h.drain()
	h.cloud.takeCalls()
	h.takeEvents()
	h.cloud.delay = delay
	return h
}

func (h *harness) run(workers int) {
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	go h.c.Run(ctx, workers, nil)
}

// waitCalls waits until the cloud recorded a call for which ok holds and returns the calls so
// far (they stay recorded).
func (h *harness) waitCalls(what string, ok func(string) bool) []string {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		h.cloud.mu.Lock()
		calls := append([]string(nil), h.cloud.calls...)
		h.cloud.mu.Unlock()
		for _, c := range calls {
			if ok(c) {
				return calls
			}
		}
	}
	h.t.Fatalf("no %s within 10s", what)
	return nil
}

// A Service created while a drift resync of 40 load balancers runs is synced by the next free
// worker, not after the resync: at most the resync syncs already under way come first.
func TestResyncNeverDelaysAChange(t *testing.T) {
	h := servedHarness(t, 40, 20*time.Millisecond)
	h.run(2)
	if n := h.c.queueResync(); n != 40 {
		t.Fatalf("resync queued %d, want 40", n)
	}
	before := h.waitCalls("resync sync", func(c string) bool { return strings.HasPrefix(c, "ensure ns/svc-") })
	started := len(before)
	if _, err := h.client.CoreV1().Services("ns").Create(context.Background(), lbService("new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	calls := h.waitCalls("sync of the new Service", func(c string) bool { return strings.HasPrefix(c, "ensure ns/new ") })
	ahead := 0
	for _, c := range calls[started:] {
		if strings.HasPrefix(c, "ensure ns/new ") {
			break
		}
		ahead++
	}
	// The informer's delivery of the new Service takes a few milliseconds; the resync (one
	// worker of two, 20 ms a sync) makes a few syncs meanwhile. A FIFO queue had ~35 ahead.
	if ahead > 5 {
		t.Errorf("%d resync syncs ran between the new Service's creation and its sync, want at most 5 (calls %q)", ahead, calls)
	}
}

// The drift resync holds half the workers: with 4 workers and nothing else to do, 2 of its
// syncs run at once, never more.
func TestResyncHoldsHalfTheWorkers(t *testing.T) {
	h := servedHarness(t, 20, 10*time.Millisecond)
	h.run(4)
	h.c.queueResync()
	calls := 0
	for deadline := time.Now().Add(10 * time.Second); calls < 20 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		h.cloud.mu.Lock()
		calls = len(h.cloud.calls)
		h.cloud.mu.Unlock()
	}
	if calls < 20 {
		t.Fatalf("the resync made %d of 20 syncs within 10s", calls)
	}
	h.cloud.mu.Lock()
	peak := h.cloud.peak
	h.cloud.mu.Unlock()
	if peak != resyncLimit(4) { // more starves changes of workers; fewer slows the resync for nothing
		t.Errorf("at most %d resync syncs ran at once, want %d", peak, resyncLimit(4))
	}
	eq(t, "events of a quiet resync", h.takeEvents(), nil)
}

func TestResyncLimit(t *testing.T) {
	for workers, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 10: 5} {
		if got := resyncLimit(workers); got != want {
			t.Errorf("resyncLimit(%d) = %d, want %d", workers, got, want)
		}
	}
}

// A key queued for its own sync, being synced, or admitted already is not admitted from the
// resync; once its sync is done it is again.
func TestFairnessAdmit(t *testing.T) {
	f := newFairness()
	f.setLimit(1)
	for _, step := range []struct {
		do   func()
		want bool
	}{
		{func() {}, true},                           // free: admitted
		{func() {}, false},                          // admitted and not done
		{func() { f.take("k"); f.done("k") }, true}, // its sync done
		{func() { f.take("k"); f.done("k"); f.markQueued("k") }, false},
		{func() { f.take("k") }, false}, // being synced
		{func() { f.done("k") }, true},
	} {
		step.do()
		if got := f.admit("k"); got != step.want {
			t.Fatalf("admit = %v, want %v (queued %v active %v admitted %v)", got, step.want, f.queued, f.active, f.admitted)
		}
	}
}
