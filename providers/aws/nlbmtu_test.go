package aws

import (
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// The MTU rules a node group should hold, from its client rules, and which MTU rules may go.
func TestNLBMTURules(t *testing.T) {
	const cluster = "prod"
	svcA := ownership.Identity{Cluster: cluster, Namespace: "ns", Name: "a", UID: "uid-a"}
	svcB := ownership.Identity{Cluster: cluster, Namespace: "ns", Name: "b", UID: "uid-b"}
	other := ownership.Identity{Cluster: "staging", Namespace: "ns", Name: "a", UID: "uid-o"}
	client := func(id ownership.Identity, proto, cidr string) rule {
		return rule{proto: proto, from: 30080, to: 30080, cidr: cidr, desc: ruleDescription(id, "client")}
	}
	ours := mtuDescription(cluster)
	upClient := rule{proto: "tcp", from: 30081, to: 30081, cidr: "0.0.0.0/0", desc: "kubernetes.io/rule/nlb/client=a6f1c0002"}
	upMTU := mtuRule("0.0.0.0/0", upstreamNLBMTUDescription)
	for _, tc := range []struct {
		name     string
		rules    []rule
		want     []rule
		mine     []rule // MTU rules of the group that may be revoked
		notMine  []rule
		add, del []rule // the plan for a group holding rules
	}{
		{name: "one range of one NLB", rules: []rule{client(svcA, "tcp", "0.0.0.0/0")},
			want: []rule{mtuRule("0.0.0.0/0", ours)}, add: []rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "one rule per range, whatever the ports, protocols and Services",
			rules: []rule{client(svcA, "tcp", "10.0.0.0/8"), client(svcA, "udp", "10.0.0.0/8"), client(svcB, "tcp", "10.0.0.0/8"), client(svcB, "tcp", "192.0.2.0/24")},
			want:  []rule{mtuRule("10.0.0.0/8", ours), mtuRule("192.0.2.0/24", ours)}, add: []rule{mtuRule("10.0.0.0/8", ours), mtuRule("192.0.2.0/24", ours)}},
		{name: "IPv6 ranges get none, as upstream (IpRanges only)",
			rules: []rule{client(svcA, "tcp", "2001:db8::/32"), client(svcA, "tcp", "192.0.2.0/24")},
			want:  []rule{mtuRule("192.0.2.0/24", ours)}, add: []rule{mtuRule("192.0.2.0/24", ours)}},
		{name: "health rules are not client rules",
			rules: []rule{{proto: "tcp", from: 32100, to: 32100, cidr: "10.0.1.0/24", desc: ruleDescription(svcA, "health")}}},
		{name: "upstream's client rule not yet taken over keeps the range",
			rules: []rule{upClient}, want: []rule{mtuRule("0.0.0.0/0", ours)}, add: []rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "another cluster's client rule is not this cluster's",
			rules: []rule{client(other, "tcp", "0.0.0.0/0")}},
		{name: "upstream's MTU rule taken over while a client rule admits its range: no write",
			rules: []rule{client(svcA, "tcp", "0.0.0.0/0"), upMTU},
			want:  []rule{mtuRule("0.0.0.0/0", ours)}, notMine: []rule{upMTU}},
		{name: "upstream's MTU rule kept for another cluster's NLB",
			rules: []rule{client(other, "tcp", "0.0.0.0/0"), upMTU}, notMine: []rule{upMTU}},
		{name: "upstream's MTU rule without a client rule of its range goes",
			rules: []rule{client(svcA, "tcp", "10.0.0.0/8"), upMTU},
			want:  []rule{mtuRule("10.0.0.0/8", ours)}, mine: []rule{upMTU},
			add: []rule{mtuRule("10.0.0.0/8", ours)}, del: []rule{upMTU}},
		{name: "ccm's MTU rule without a client rule goes; a user's, another cluster's, an IPv6 one stay",
			rules: []rule{mtuRule("0.0.0.0/0", ours), mtuRule("10.0.0.0/8", ""), mtuRule("192.0.2.0/24", mtuDescription("staging")),
				{proto: "icmp", from: 3, to: 4, group: "sg-1", desc: ours}, {proto: "tcp", from: 3, to: 4, cidr: "0.0.0.0/0", desc: upstreamNLBMTUDescription}},
			mine:    []rule{mtuRule("0.0.0.0/0", ours)},
			notMine: []rule{mtuRule("10.0.0.0/8", ""), mtuRule("192.0.2.0/24", mtuDescription("staging")), {proto: "icmp", from: 3, to: 4, group: "sg-1", desc: ours}, {proto: "tcp", from: 3, to: 4, cidr: "0.0.0.0/0", desc: upstreamNLBMTUDescription}},
			del:     []rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "ccm's MTU rule there: no write",
			rules: []rule{client(svcA, "tcp", "0.0.0.0/0"), mtuRule("0.0.0.0/0", ours)},
			want:  []rule{mtuRule("0.0.0.0/0", ours)}, mine: []rule{mtuRule("0.0.0.0/0", ours)}},
		{name: "another cluster's MTU rule holds the range: ours as its halves, as client rules",
			rules: []rule{client(svcA, "tcp", "0.0.0.0/0"), mtuRule("0.0.0.0/0", mtuDescription("staging"))},
			want:  []rule{mtuRule("0.0.0.0/0", ours)}, notMine: []rule{mtuRule("0.0.0.0/0", mtuDescription("staging"))},
			add: []rule{mtuRule("0.0.0.0/1", ours), mtuRule("128.0.0.0/1", ours)}},
		{name: "a user's rule already admitting the range: left alone, nothing added",
			rules: []rule{client(svcA, "tcp", "0.0.0.0/0"), mtuRule("0.0.0.0/0", "")},
			want:  []rule{mtuRule("0.0.0.0/0", ours)}, notMine: []rule{mtuRule("0.0.0.0/0", "")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, mine := nlbMTURules(cluster, tc.rules)
			if !slices.Equal(want, tc.want) {
				t.Errorf("want %v, expected %v", want, tc.want)
			}
			for _, r := range tc.mine {
				if !mine(r) {
					t.Errorf("%v (%q) is not taken as ours", r.text(), r.desc)
				}
			}
			for _, r := range tc.notMine {
				if mine(r) {
					t.Errorf("%v (%q) is taken as ours", r.text(), r.desc)
				}
			}
			add, del := planRules(tc.rules, want, mine)
			if !slices.Equal(add, tc.add) || !slices.Equal(del, tc.del) {
				t.Errorf("plan: add %v del %v, expected add %v del %v", add, del, tc.add, tc.del)
			}
		})
	}
	if d := mtuDescription(cluster); d != "ccm:prod - - nlb-mtu" || ownership.DescribedBy(svcA, d) {
		t.Errorf("ccm's MTU rule description %q: want the cluster's, no Service's", d)
	}
}

// icmpRules are the ICMP rules of the node group.
func icmpRules(t *testing.T, h *harness) []fakeaws.Rule {
	t.Helper()
	g, _ := h.fake.Group(fakeaws.NodeGroup)
	return slices.DeleteFunc(slices.Clone(g.Rules), func(r fakeaws.Rule) bool { return r.Protocol != "icmp" })
}

// Through the SDK at the fake: each NLB's IPv4 client ranges get the shared MTU rule (ICMP 3-4)
// in the node group, one per range; a restart writes nothing; deleting one of two NLBs with the
// same range keeps it, deleting the other removes it, and the cloud is as it was.
func TestNLBMTURuleLifecycle(t *testing.T) {
	h := newHarness(t, "mtu")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	var nodes []*v1.Node
	for _, n := range []string{"mtu-a", "mtu-b"} {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	before := h.fake.Inventory()
	desc := mtuDescription("mtu")
	a := lbService("a", map[string]string{annotationPrefix + annType: "nlb"})
	a.UID = "uid-a"
	a.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32"}
	b := lbService("b", map[string]string{annotationPrefix + annType: "nlb"})
	b.UID = "uid-b"
	b.Spec.Ports = []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30180, Protocol: v1.ProtocolTCP}}
	b.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}

	mtu := func(cidrs ...string) []fakeaws.Rule {
		var out []fakeaws.Rule
		for _, c := range cidrs {
			out = append(out, fakeaws.Rule{Protocol: "icmp", From: 3, To: 4, CIDR: c, Description: desc})
		}
		return out
	}
	check := func(step string, want []fakeaws.Rule) {
		t.Helper()
		got := icmpRules(t, h)
		slices.SortFunc(got, func(x, y fakeaws.Rule) int { return strings.Compare(x.CIDR, y.CIDR) })
		if !slices.Equal(got, want) {
			t.Errorf("%s: node group ICMP rules %v, want %v", step, got, want)
		}
	}

	if _, err := lb.EnsureLoadBalancer(ctx, "x", a, nodes); err != nil {
		t.Fatal(err)
	}
	check("first NLB", mtu("10.0.0.0/8", "192.0.2.0/24"))
	calls := h.fake.Calls()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", b, nodes); err != nil {
		t.Fatal(err)
	}
	check("second NLB, same range", mtu("10.0.0.0/8", "192.0.2.0/24"))
	if n := h.fake.Calls()["ec2:AuthorizeSecurityGroupIngress"] - calls["ec2:AuthorizeSecurityGroupIngress"]; n != 1 {
		t.Errorf("second NLB: %d AuthorizeSecurityGroupIngress, want 1 (its client rule)", n)
	}

	// A restart with nothing changed writes nothing.
	w := h.fake.Writes()
	lb2, _ := h.cloud(t, "").LoadBalancer()
	for _, svc := range []*v1.Service{a, b} {
		if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
			t.Fatal(err)
		}
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("restart made %d writes", d)
	}

	if err := lb2.EnsureLoadBalancerDeleted(ctx, "x", a); err != nil {
		t.Fatal(err)
	}
	check("first NLB deleted", mtu("10.0.0.0/8"))
	if err := lb2.EnsureLoadBalancerDeleted(ctx, "x", b); err != nil {
		t.Fatal(err)
	}
	check("both deleted", nil)
	if after := h.fake.Inventory(); !slices.Equal(after, before) {
		t.Errorf("leftovers:\nbefore %v\nafter  %v", before, after)
	}
}

// A takeover of upstream's NLBs writes nothing for upstream's MTU rule (it is there); deleting
// the first Service keeps it (the second NLB's clients still need it), deleting the last
// leaves no rule of either CCM in the node group.
func TestUpstreamMTURuleGoesWithTheLastNLB(t *testing.T) {
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	g, _ := h.fake.Group(fakeaws.NodeGroup)
	before := slices.Clone(g.Rules)
	one, two := migService(1, true), migService(2, true)
	seedAs(h, migCluster, one, nodes)
	seedAs(h, migCluster, two, nodes)
	upMTU := []fakeaws.Rule{{Protocol: "icmp", From: 3, To: 4, CIDR: "0.0.0.0/0", Description: fakeaws.NLBMTUDescription}}
	if got := icmpRules(t, h); !slices.Equal(got, upMTU) {
		t.Fatalf("seed: ICMP rules %v, want upstream's %v", got, upMTU)
	}
	lb, _ := h.cloud(t, "").LoadBalancer()
	ctx := context.Background()

	calls := h.fake.Calls()
	ensureOK(t, lb, one, nodes)
	ensureOK(t, lb, two, nodes)
	after := h.fake.Calls()
	for _, op := range []string{"ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"} {
		if n := after[op] - calls[op]; n != 0 {
			t.Errorf("takeover: %d %s, want 0", n, op)
		}
	}
	if got := icmpRules(t, h); !slices.Equal(got, upMTU) {
		t.Errorf("after the takeover: ICMP rules %v, want upstream's %v", got, upMTU)
	}
	w := h.fake.Writes()
	lb2, _ := h.cloud(t, "").LoadBalancer()
	ensureOK(t, lb2, one, nodes)
	ensureOK(t, lb2, two, nodes)
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("restart after the takeover made %d writes", d)
	}

	if err := lb2.EnsureLoadBalancerDeleted(ctx, migCluster, one); err != nil {
		t.Fatal(err)
	}
	if got := icmpRules(t, h); !slices.Equal(got, upMTU) {
		t.Errorf("one of two deleted: ICMP rules %v, want upstream's %v", got, upMTU)
	}
	if err := lb2.EnsureLoadBalancerDeleted(ctx, migCluster, two); err != nil {
		t.Fatal(err)
	}
	g, _ = h.fake.Group(fakeaws.NodeGroup)
	if !slices.Equal(g.Rules, before) {
		t.Errorf("every Service deleted: node group rules %v, want %v", g.Rules, before)
	}
}
