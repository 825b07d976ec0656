package vsphere

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
)

// Through govmomi against vcsim: two clusters' records in one category; a listing of a
// restarted ccm reads the category once and each record once, a listing of a running one
// only the category; a delete reads the record again and refuses when it names another owner;
// the orphan's record is deleted with one write.
func TestOwnedLoadBalancers(t *testing.T) {
	ctx := context.Background()
	s := startSim(t)
	cloud := func(cluster string) *Cloud {
		c := newTestCloud(t, s)
		c.UseClusterName(cluster)
		return c
	}
	a, b := cloud("alpha"), cloud("beta")
	const n = 5
	for i := range n {
		for _, c := range []struct {
			cloud   *Cloud
			cluster string
		}{{a, "alpha"}, {b, "beta"}} {
			if i > 0 && c.cluster == "beta" {
				continue
			}
			svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("svc-%d", i), UID: types.UID(fmt.Sprintf("uid-%s-%d", c.cluster, i))},
				Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
			if _, err := c.cloud.lb.EnsureLoadBalancer(ctx, c.cluster, svc, nil); err != nil {
				t.Fatal(err)
			}
		}
	}

	restarted := cloud("alpha")
	before := s.Calls()
	got, err := restarted.OwnedLoadBalancers(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	first := sub(s.Calls(), before)
	if len(got) != n {
		t.Fatalf("alpha lists %d records, want %d: %+v", len(got), n, got)
	}
	for _, lb := range got {
		if lb.Owner.Cluster != "alpha" || lb.Owner.UID != "uid-alpha-"+lb.Owner.Name[len("svc-"):] {
			t.Errorf("listed %+v", lb)
		}
	}
	before = s.Calls()
	if _, err := restarted.OwnedLoadBalancers(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	again := sub(s.Calls(), before)
	t.Logf("listing after a restart: %d calls %v; next listing: %d calls %v", first.Total, first.PerOp, again.Total, again.PerOp)
	if first.Writes != 0 || again.Writes != 0 {
		t.Errorf("listings wrote: %d, %d", first.Writes, again.Writes)
	}
	if again.Total != 1 {
		t.Errorf("a listing of a running ccm made %d calls, want 1 (the category listing)", again.Total)
	}

	orphan := got[0]
	replaced := orphan
	replaced.Owner.UID = "uid-made-again"
	before = s.Calls()
	if err := restarted.DeleteOwnedLoadBalancer(ctx, "alpha", replaced); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("delete with another UID than the record's: %v, want a refusal", err)
	}
	if err := b.DeleteOwnedLoadBalancer(ctx, "beta", orphan); err == nil {
		t.Error("beta deleted alpha's record")
	}
	if d := sub(s.Calls(), before); d.Writes != 0 {
		t.Errorf("refused deletes wrote %d times", d.Writes)
	}
	before = s.Calls()
	if err := restarted.DeleteOwnedLoadBalancer(ctx, "alpha", orphan); err != nil {
		t.Fatal(err)
	}
	del := sub(s.Calls(), before)
	t.Logf("deleting one orphan: %d calls %v", del.Total, del.PerOp)
	if del.Writes != 1 {
		t.Errorf("delete made %d writes, want 1", del.Writes)
	}
	left, err := cloud("alpha").OwnedLoadBalancers(ctx, "alpha")
	if err != nil || len(left) != n-1 {
		t.Errorf("after the delete alpha lists %d (%v), want %d", len(left), err, n-1)
	}
	if mine, _ := b.OwnedLoadBalancers(ctx, "beta"); len(mine) != 1 {
		t.Errorf("beta lists %+v, want its one record", mine)
	}
}
