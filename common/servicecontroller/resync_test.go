package servicecontroller

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	servicehelper "k8s.io/cloud-provider/service/helpers"
)

// A drift resync asks the provider again about every load balancer this controller made (the
// provider compares with the cloud and repairs), and writes nothing to the API, Events included,
// when the answer is the same. Services of another class and Services not yet synced are not
// queued. A changed answer is patched and recorded as a sync would.
func TestDriftResyncIsQuiet(t *testing.T) {
	svc := lbService("web")
	theirs := lbService("theirs", withClass("other.io/lb"), withFinalizer)
	fresh := lbService("fresh", withFinalizer) // never synced in this process
	h := newHarness(t, DefaultClasses(), svc, theirs, fresh, node("n1"))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	h.waitFor(svc, func(s *v1.Service) bool {
		return servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 1
	})
	h.cloud.takeCalls()
	h.writes()
	h.takeEvents()
	h.drain()

	if n := h.c.queueResync(); n != 1 || h.c.resyncQueue.Len() != 1 || h.c.queue.Len() != 0 {
		t.Fatalf("queued %d (resync queue %d, Service queue %d), want 1, 1, 0: only the Service synced in this process, "+
			"in the resync's own queue", n, h.c.resyncQueue.Len(), h.c.queue.Len())
	}
	h.admitResyncs()
	h.c.processService(context.Background())
	eq(t, "cloud calls", h.cloud.takeCalls(), []string{"ensure ns/web n1"})
	eq(t, "writes", h.writes(), nil)
	eq(t, "events", h.takeEvents(), nil)

	// The provider's answer differs from the status (say a repair had to recreate the load
	// balancer): patched, with the Events a sync records.
	cur, _ := h.c.services.Services("ns").Get("web")
	old := cur.DeepCopy()
	old.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.51.100.7"}}
	if _, err := h.client.CoreV1().Services("ns").UpdateStatus(context.Background(), old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(svc, func(s *v1.Service) bool { return s.Status.LoadBalancer.Ingress[0].IP == "198.51.100.7" })
	h.writes()
	h.drain()
	h.c.queueResync()
	h.admitResyncs()
	h.c.processService(context.Background())
	eq(t, "writes after a changed answer", h.writes(), []string{"patch services/status"})
	eq(t, "events after a changed answer", h.takeEvents(), []string{"Normal EnsuringLoadBalancer Ensuring load balancer", "Normal EnsuredLoadBalancer Ensured load balancer"})
}

// RunDriftResync queues at each period and stops with its context; 0 turns it off.
func TestRunDriftResync(t *testing.T) {
	svc := lbService("web")
	h := newHarness(t, DefaultClasses(), svc, node("n1"))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	h.waitFor(svc, servicehelper.HasLBFinalizer)
	h.drain()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.c.RunDriftResync(ctx, 0); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("period 0 did not return at once")
	}
	go h.c.RunDriftResync(ctx, 30*time.Millisecond)
	deadline := time.Now().Add(2 * time.Second)
	for h.c.resyncQueue.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing queued within 2s at a 30ms period")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
}

// A Service that changes while a drift resync has it queued is synced as a change (the usual
// Ensuring/Ensured Events), not quietly.
func TestChangeDuringResyncIsNotQuiet(t *testing.T) {
	svc := lbService("web")
	h := newHarness(t, DefaultClasses(), svc, node("n1"))
	if err := h.sync(svc); err != nil {
		t.Fatal(err)
	}
	h.waitFor(svc, func(s *v1.Service) bool {
		return servicehelper.HasLBFinalizer(s) && len(s.Status.LoadBalancer.Ingress) == 1
	})
	h.takeEvents()
	h.drain()
	h.c.queueResync()
	h.admitResyncs()
	cur, _ := h.c.services.Services("ns").Get("web")
	changed := cur.DeepCopy()
	changed.Spec.Ports[0].Port = 81
	if _, err := h.client.CoreV1().Services("ns").Update(context.Background(), changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(svc, func(s *v1.Service) bool { return s.Spec.Ports[0].Port == 81 })
	for h.c.queue.Len() > 0 {
		h.c.processService(context.Background())
	}
	eq(t, "events", h.takeEvents(), []string{"Normal EnsuringLoadBalancer Ensuring load balancer", "Normal EnsuredLoadBalancer Ensured load balancer"})
}
