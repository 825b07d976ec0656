package aws

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// With EC2 answering two instances a page, look-ups by ID (batched), by private DNS name
// (batched) and by tag still find every instance: the provider follows NextToken, and the
// fake counts the pages.
func TestInstanceLookupsFollowPages(t *testing.T) {
	h := newHarness(t, "paging")
	h.fake.SetPageLimit(2)
	c := h.cloud(t, "[Global]\nInstanceCacheTTL = 0s\n")
	inst, _ := c.InstancesV2()
	ctx := context.Background()
	const n = 7
	var byID, byName []*v1.Node
	for i := range n {
		name := fmt.Sprintf("page-%d", i)
		_, md := h.machine(name)
		byID = append(byID, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
		byName = append(byName, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	// One batch of all IDs: the instance-id filter matches 7, answered 2 a page.
	got, err := c.inst.Get(ctx, idsOf(t, byID))
	if err != nil || len(got) != n {
		t.Fatalf("batched look-up of %d IDs found %d (%v)", n, len(got), err)
	}
	before := h.fake.Operations()["ec2:DescribeInstances"]
	got, err = c.inst.Get(ctx, idsOf(t, byID))
	if pages := h.fake.Operations()["ec2:DescribeInstances"] - before; err != nil || len(got) != n || pages != (n+1)/2 {
		t.Errorf("batched look-up of %d IDs: found %d in %d calls (%v), want all in %d pages", n, len(got), pages, err, (n+1)/2)
	}
	for _, node := range append(byID, byName...) {
		if exists, err := inst.InstanceExists(ctx, node); err != nil || !exists {
			t.Errorf("InstanceExists(%s, %q) = (%v, %v), want (true, nil)", node.Name, node.Spec.ProviderID, exists, err)
		}
	}
}

func idsOf(t *testing.T, nodes []*v1.Node) []string {
	var ids []string
	for _, n := range nodes {
		id, err := instanceID(n.Spec.ProviderID)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// The route table is found by its cluster tag over every page: a second tagged table on a
// later page is seen (and refused), not silently ignored.
func TestRouteTableLookupFollowsPages(t *testing.T) {
	h := newHarness(t, "rtpages")
	h.fake.SetPageLimit(1)
	c := h.routeCloud(t, h.cfg, podCIDRs)
	rs, _ := c.Routes()
	ctx := context.Background()
	if _, err := rs.ListRoutes(ctx, "rtpages"); err != nil {
		t.Fatalf("one tagged table: %v", err)
	}
	h.fake.AddRouteTable("rtb-zz-second", map[string]string{"kubernetes.io/cluster/rtpages": "owned"})
	before := h.fake.Operations()["ec2:DescribeRouteTables"]
	_, err := rs.ListRoutes(ctx, "rtpages")
	if err == nil || !strings.Contains(err.Error(), "2 route tables") {
		t.Errorf("two tagged tables, one a page: ListRoutes error %v, want one naming 2 route tables", err)
	}
	if pages := h.fake.Operations()["ec2:DescribeRouteTables"] - before; pages != 2 {
		t.Errorf("DescribeRouteTables calls %d, want 2 (one a page)", pages)
	}
}

// The cluster's load balancer listings read every page of DescribeLoadBalancers (classic and
// ELBv2) and ask DescribeTags for at most 20 names at a time (the fake refuses more).
func TestLoadBalancerListingsFollowPagesAndBatchTags(t *testing.T) {
	h := newHarness(t, "lbpages")
	h.fake.SetPageLimit(7)
	c := h.cloud(t, "")
	ctx := context.Background()
	const n = 45
	for i := range n {
		h.fake.AddClassicLB(fmt.Sprintf("%sclassic%02d", lbname.AWSELB.Prefix, i), 80, 30080, map[string]string{ownership.ServiceTag: fmt.Sprintf("ns/c%d", i)})
		h.fake.AddNLB(fmt.Sprintf("%snlb%02d", lbname.AWSELB.Prefix, i), map[string]string{ownership.ServiceTag: fmt.Sprintf("ns/n%d", i)})
	}
	h.fake.AddClassicLB("not-ours", 80, 30080, nil)
	before := h.fake.Operations()
	lbs, tags, err := c.lb.listELBs(ctx)
	if err != nil || len(lbs) != n || len(tags) != n {
		t.Fatalf("listELBs: %d load balancers, %d tag sets (%v); want %d", len(lbs), len(tags), err, n)
	}
	for name, tg := range tags {
		if tg[ownership.ServiceTag] == "" {
			t.Errorf("classic %s: tags %v lack the service tag", name, tg)
		}
	}
	nlbs, ntags, err := c.lb.listNLBs(ctx)
	if err != nil || len(nlbs) != n || len(ntags) != n {
		t.Fatalf("listNLBs: %d load balancers, %d tag sets (%v); want %d", len(nlbs), len(ntags), err, n)
	}
	after := h.fake.Operations()
	for op, want := range map[string]int{
		"elb:DescribeLoadBalancers": (n + 1 + 6) / 7, "elbv2:DescribeLoadBalancers": (n + 6) / 7,
		"elb:DescribeTags": (n + 19) / 20, "elbv2:DescribeTags": (n + 19) / 20,
	} {
		if got := after[op] - before[op]; got != want {
			t.Errorf("%s: %d calls, want %d", op, got, want)
		}
	}
}

// A classic ELB reconciled while EC2 answers one item a page still gets one subnet per zone
// (DescribeSubnets read to the end) and converges: a second Ensure writes nothing.
func TestEnsureFollowsEC2Pages(t *testing.T) {
	h := newHarness(t, "ensurepages")
	h.fake.SetPageLimit(1)
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	ctx := context.Background()
	var nodes []*v1.Node
	for _, n := range []string{"ep-a", "ep-b", "ep-c"} {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "paged", UID: "uid-paged"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	e, ok := h.fake.ClassicLB(c.lb.name(svc))
	if !ok {
		t.Fatal("no ELB")
	}
	if len(e.Subnets) != 3 || len(e.Instances) != 3 {
		t.Errorf("subnets %v, instances %v; want one public subnet per zone and the 3 nodes", e.Subnets, e.Instances)
	}
	w := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("second Ensure with one item a page made %d writes, want 0", d)
	}
}

// An NLB with three listeners, reconciled while ELBv2 answers one item a page, converges: its
// listeners and target groups are read to the last page, so a second Ensure writes nothing.
func TestNLBEnsureFollowsPages(t *testing.T) {
	h := newHarness(t, "nlbpages")
	h.fake.SetPageLimit(1)
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	ctx := context.Background()
	_, md := h.machine("np-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "np-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nlbpaged", UID: "uid-nlbpaged",
		Annotations: map[string]string{annotations.Prefix + "type": "nlb"}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{
			{Name: "a", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
			{Name: "b", Port: 81, NodePort: 30081, Protocol: v1.ProtocolTCP},
			{Name: "c", Port: 82, NodePort: 30082, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	w := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("second Ensure with one item a page made %d writes, want 0", d)
	}
	n := 0
	for _, line := range h.fake.Inventory() {
		if strings.HasPrefix(line, "listener ") {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d listeners, want 3: %v", n, h.fake.Inventory())
	}
}

// The cluster's security groups (where an NLB's node rules may be) are read over every page.
func TestClusterGroupsFollowPages(t *testing.T) {
	h := newHarness(t, "sgpages")
	h.fake.SetPageLimit(2)
	c := h.cloud(t, "")
	for i := range 5 {
		h.fake.AddSecurityGroup(fmt.Sprintf("extra-%d", i), "d", map[string]string{"kubernetes.io/cluster/sgpages": "owned"})
	}
	h.fake.AddSecurityGroup("other-cluster", "d", map[string]string{"kubernetes.io/cluster/else": "owned"})
	ids, err := c.lb.clusterGroups(context.Background())
	if err != nil || len(ids) != 6 {
		t.Errorf("clusterGroups = %v (%v), want the node group and the 5 tagged groups", ids, err)
	}
}
