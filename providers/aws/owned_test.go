package aws

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

func opsDelta(before, after map[string]int) (int, map[string]int) {
	total, d := 0, map[string]int{}
	for op, n := range after {
		if k := n - before[op]; k > 0 {
			d[op] = k
			total += k
		}
	}
	return total, d
}

// Through the SDK against fakeaws: 25 classic ELBs and 25 NLBs of this cluster and one of
// another cluster. A listing is one DescribeLoadBalancers per API and one DescribeTags per 20;
// a delete whose owner the tags no longer prove writes nothing; an orphan NLB is deleted with
// its target groups.
func TestOwnedLoadBalancers(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "alpha")
	var nodes []*v1.Node
	for _, n := range []string{"n-a", "n-b"} {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	const n = 25
	alpha := h.cloud(t, "")
	lbA, _ := alpha.LoadBalancer()
	mk := func(lb interface {
		EnsureLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) (*v1.LoadBalancerStatus, error)
	}, name, uid, typ string) {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
		if typ == "nlb" {
			svc.Annotations = map[string]string{annotations.Prefix + annotations.Type: "nlb"}
		}
		if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		mk(lbA, fmt.Sprintf("elb-%d", i), fmt.Sprintf("uid-elb-%d", i), "classic")
		mk(lbA, fmt.Sprintf("nlb-%d", i), fmt.Sprintf("uid-nlb-%d", i), "nlb")
	}
	beta := h.NewCloudFor(t, "beta").(*Cloud)
	lbB, _ := beta.LoadBalancer()
	mk(lbB, "elb-0", "uid-beta-elb-0", "classic")

	before, writes := h.fake.Operations(), h.fake.Writes()
	got, err := alpha.OwnedLoadBalancers(ctx, "ignored")
	if err != nil {
		t.Fatal(err)
	}
	total, ops := opsDelta(before, h.fake.Operations())
	t.Logf("listing %d load balancers: %d calls %v", len(got), total, ops)
	if len(got) != 2*n {
		t.Fatalf("alpha lists %d, want %d", len(got), 2*n)
	}
	// 26 classic ELBs (beta's has the prefix too) and 25 NLBs: two tag reads each.
	want := map[string]int{"elb:DescribeLoadBalancers": 1, "elb:DescribeTags": 2, "elbv2:DescribeLoadBalancers": 1, "elbv2:DescribeTags": 2}
	for op, k := range want {
		if ops[op] != k {
			t.Errorf("%s: %d calls, want %d (all: %v)", op, ops[op], k, ops)
		}
	}
	if total != 6 || h.fake.Writes() != writes {
		t.Errorf("listing: %d calls and %d writes, want 6 and none", total, h.fake.Writes()-writes)
	}
	byID := map[string]int{}
	for i, lb := range got {
		if lb.Owner.Cluster != "alpha" || lb.Owner.UID != "uid-"+lb.Owner.Name {
			t.Errorf("listed %+v", lb)
		}
		byID[lb.Owner.Name] = i
	}

	nlb := got[byID["nlb-3"]]
	replaced := nlb
	replaced.Owner.UID = "uid-made-again"
	writes = h.fake.Writes()
	if err := alpha.DeleteOwnedLoadBalancer(ctx, "", replaced); !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("delete with another UID than the tags': %v, want a refusal", err)
	}
	if err := beta.DeleteOwnedLoadBalancer(ctx, "", got[byID["elb-0"]]); err == nil {
		t.Error("beta deleted alpha's ELB")
	}
	if d := h.fake.Writes() - writes; d != 0 {
		t.Errorf("refused deletes made %d writes", d)
	}
	for _, name := range []string{"nlb-3", "elb-4"} {
		before := h.fake.Operations()
		if err := alpha.DeleteOwnedLoadBalancer(ctx, "", got[byID[name]]); err != nil {
			t.Fatalf("deleting %s: %v", name, err)
		}
		total, ops := opsDelta(before, h.fake.Operations())
		t.Logf("deleting orphan %s: %d calls %v", name, total, ops)
	}
	left, err := alpha.OwnedLoadBalancers(ctx, "")
	if err != nil || len(left) != 2*n-2 {
		t.Errorf("after two deletes alpha lists %d (%v), want %d", len(left), err, 2*n-2)
	}
	if mine, _ := beta.OwnedLoadBalancers(ctx, ""); len(mine) != 1 {
		t.Errorf("beta lists %+v, want its one ELB", mine)
	}
	// No target group of nlb-3 is left.
	tgs, err := alpha.lb.ownedTargetGroups(ctx, alpha.lb.identity(nlb.Service()))
	if err != nil || len(tgs) != 0 {
		t.Errorf("target groups of the deleted NLB left: %d (%v)", len(tgs), err)
	}
}
