package vsphere

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/simcontrol"
)

// TestSyncCost counts, at vcsim, what syncs of unchanged load balancers cost: the first sync
// of every Service after a restart (one listing for all, then nothing per Service beyond it)
// and a periodic resync (one read of each record). Neither writes.
func TestSyncCost(t *testing.T) {
	const n = 30
	ctx := context.Background()
	s := startSim(t)
	cloud := func() *Cloud {
		c := newTestCloud(t, s)
		c.UseClusterName("cost")
		return c
	}
	lb, _ := cloud().LoadBalancer()
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}}
	svcs := make([]*v1.Service, n)
	for i := range svcs {
		svcs[i] = &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "cost", Name: fmt.Sprintf("svc-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
		st, err := lb.EnsureLoadBalancer(ctx, "cost", svcs[i], nodes)
		if err != nil {
			t.Fatal(err)
		}
		svcs[i].Status.LoadBalancer = *st
	}
	syncAll := func(what string, lb interface {
		EnsureLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) (*v1.LoadBalancerStatus, error)
	}) simcontrol.Calls {
		before := s.Calls()
		for _, svc := range svcs {
			if _, err := lb.EnsureLoadBalancer(ctx, "cost", svc, nodes); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		d := sub(s.Calls(), before)
		reads := d.Total - d.Writes
		t.Logf("%s, %d unchanged LBs: %d writes, %d reads (%.2f per LB): %v", what, n, d.Writes, reads, float64(reads)/n, d.PerOp)
		if d.Writes != 0 {
			t.Errorf("%s: %d writes, want 0", what, d.Writes)
		}
		return d
	}
	restarted, _ := cloud().LoadBalancer()
	r := syncAll("first sync after a restart", restarted)
	// One category listing and one read per record; the login and the category look-up on top.
	if got, limit := r.Total-r.Writes, n+10; got > limit {
		t.Errorf("restart: %d reads for %d LBs, want at most %d (one listing, one read per record)", got, n, limit)
	}
	p := syncAll("periodic resync", restarted)
	if got := p.PerOp["GET /rest/com/vmware/cis/tagging/tag"]; got != n {
		t.Errorf("resync: %d tag reads, want %d (each record compared with vCenter's)", got, n)
	}
	if got := p.Total - p.Writes; got != n {
		t.Errorf("resync: %d reads, want %d", got, n)
	}
}

// sub is a minus b, per operation.
func sub(a, b simcontrol.Calls) simcontrol.Calls {
	out := simcontrol.Calls{Total: a.Total - b.Total, Writes: a.Writes - b.Writes, PerOp: map[string]int{}}
	for k, v := range a.PerOp {
		if d := v - b.PerOp[k]; d != 0 {
			out.PerOp[k] = d
		}
	}
	return out
}
