package dummy

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// slowPutStore holds the first Put it is told to until released, like a store write that is
// still in flight.
type slowPutStore struct {
	*MemStore
	hold    chan struct{} // closed: release
	holding chan struct{} // closed when the held Put has started
}

func (s *slowPutStore) Put(ctx context.Context, k string, r Record) error {
	select {
	case <-s.holding:
	default:
		close(s.holding)
		<-s.hold
	}
	return s.MemStore.Put(ctx, k, r)
}

// The node sync's UpdateLoadBalancer runs in its own goroutine, also for a Service whose load
// balancer a worker is deleting. An update whose write was in flight must not bring the
// record back after the delete.
func TestUpdateOverlappingDeleteLeavesNoRecord(t *testing.T) {
	c, err := New(strings.NewReader("[Pool \"p\"]\ncidr = 192.0.2.0/28\n"))
	if err != nil {
		t.Fatal(err)
	}
	mem := NewMemStore()
	c.UseStore(mem)
	ctx := context.Background()
	svc := svcWith("web", nil, 80)
	node := func(n string) *v1.Node { return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}} }
	if _, err := c.lb.EnsureLoadBalancer(ctx, "c", svc, []*v1.Node{node("a")}); err != nil {
		t.Fatal(err)
	}
	slow := &slowPutStore{MemStore: mem, hold: make(chan struct{}), holding: make(chan struct{})}
	c.lb.store = slow

	updated := make(chan error, 1)
	go func() { updated <- c.lb.UpdateLoadBalancer(ctx, "c", svc, []*v1.Node{node("a"), node("b")}) }()
	<-slow.holding
	deleted := make(chan error, 1)
	go func() { deleted <- c.lb.EnsureLoadBalancerDeleted(ctx, "c", svc) }()
	time.Sleep(50 * time.Millisecond) // let the delete run as far as it can
	close(slow.hold)
	if err := <-updated; err != nil {
		t.Errorf("update: %v", err)
	}
	if err := <-deleted; err != nil {
		t.Fatalf("delete: %v", err)
	}
	records, _ := mem.Load(ctx)
	if len(records) != 0 {
		t.Errorf("records after the delete: %v; want none (the overlapping update wrote it back)", records)
	}
	if err := c.lb.UpdateLoadBalancer(ctx, "c", svc, []*v1.Node{node("a")}); err == nil {
		t.Error("an update after the delete succeeded; it must not create the load balancer")
	}
	if records, _ := mem.Load(ctx); len(records) != 0 {
		t.Errorf("records after a late update: %v", records)
	}
}
