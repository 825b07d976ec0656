package dummy

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A record that reached the shared store after this process read it (the last write of a
// leader killed during a failover, say) is still found when its Service is deleted: the library
// asks GetLoadBalancer first and skips the delete on "does not exist", so an answer from memory
// alone left the record, and the Service's address, behind for good.
func TestDeleteFindsARecordWrittenAfterTheLoad(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	newCloud := func() *Cloud {
		c, err := New(strings.NewReader(testConfig))
		if err != nil {
			t.Fatal(err)
		}
		c.UseStore(newConfigMapStore(client, "kube-system", "c"))
		return c
	}
	old, standby := newCloud(), newCloud()
	nodes := []*v1.Node{nodeNamed("n1")}

	// The new leader reads the store first (one Service of its own), then the old leader's
	// last write lands.
	first := svcUID("team", "first", "uid-first", nil, 80)
	if _, err := standby.lb.EnsureLoadBalancer(ctx, "c", first, nodes); err != nil {
		t.Fatal(err)
	}
	late := svcUID("team", "late", "uid-late", nil, 80)
	if _, err := old.lb.EnsureLoadBalancer(ctx, "c", late, nodes); err != nil {
		t.Fatal(err)
	}

	if _, exists, err := standby.lb.GetLoadBalancer(ctx, "c", late); err != nil || !exists {
		t.Fatalf("GetLoadBalancer of a record written after the load: exists=%v err=%v, want true", exists, err)
	}
	if err := standby.lb.EnsureLoadBalancerDeleted(ctx, "c", late); err != nil {
		t.Fatal(err)
	}
	recs, err := newConfigMapStore(client, "kube-system", "c").Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, left := recs[recordKey("c", late)]; left {
		t.Errorf("the deleted Service's record is still in the store: %v", recs)
	}
	if _, kept := recs[recordKey("c", first)]; !kept {
		t.Errorf("the other Service's record is gone: %v", recs)
	}
}
