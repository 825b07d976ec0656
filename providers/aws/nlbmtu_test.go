package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

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
	desc := sgrules.MTUDescription("mtu")
	a := lbService("a", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	a.UID = "uid-a"
	a.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32"}
	b := lbService("b", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
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

	calls := h.fake.Calls()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", a, nodes); err != nil {
		t.Fatal(err)
	}
	check("first NLB", mtu("10.0.0.0/8", "192.0.2.0/24"))
	// The MTU rules go in a call of their own, after the client rules: one Authorize more.
	if n := h.fake.Calls()["ec2:AuthorizeSecurityGroupIngress"] - calls["ec2:AuthorizeSecurityGroupIngress"]; n != 2 {
		t.Errorf("first NLB: %d AuthorizeSecurityGroupIngress, want 2 (client rules, then MTU rules)", n)
	}
	calls = h.fake.Calls()
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

// mtuNodes are two machines of the harness as Nodes.
func mtuNodes(h *harness, names ...string) []*v1.Node {
	var nodes []*v1.Node
	for _, n := range names {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	return nodes
}

// mtuService is an NLB Service with one TCP port admitting cidrs.
func mtuService(name string, nodePort int32, cidrs ...string) *v1.Service {
	svc := lbService(name, map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	svc.UID = types.UID("uid-" + name)
	svc.Spec.Ports = []v1.ServicePort{{Name: "http", Port: 80, NodePort: nodePort, Protocol: v1.ProtocolTCP}}
	svc.Spec.LoadBalancerSourceRanges = cidrs
	return svc
}

// registered says whether every target group of the Service's NLB holds n targets.
func registered(t *testing.T, h *harness, svc *v1.Service, n int) bool {
	t.Helper()
	_, _, tgs, ok := h.fake.NLBByName(lbName(h.cluster, svc))
	if !ok || len(tgs) == 0 {
		t.Fatalf("no NLB for %s", svc.Name)
	}
	for _, tg := range tgs {
		if len(tg.Targets) != n {
			return false
		}
	}
	return true
}

// A node group at AWS's rule quota: the client rules fit, the MTU rule does not. The NLB sync
// still succeeds (targets registered) with a Warning naming the group; once the quota is
// raised, the next sync adds the rule.
func TestNLBMTURuleAtTheRuleLimit(t *testing.T) {
	h := newHarness(t, "lim")
	h.fake.SetRulesPerGroupLimit(fakeaws.DefaultRulesPerGroup) // a new account's quota
	ctx := context.Background()
	nodes := mtuNodes(h, "lim-a", "lim-b")
	svc := mtuService("a", 30080, "192.0.2.0/24")
	// The NLB needs 4 rules in the node group: its client rule and the health checks from its
	// 3 subnets. A user's 56 fill the group up to them.
	for i := 0; i < fakeaws.DefaultRulesPerGroup-4; i++ {
		h.fake.AddGroupRule(fakeaws.NodeGroup, fakeaws.Rule{Protocol: "tcp", From: 22, To: 22, CIDR: fmt.Sprintf("172.16.%d.0/24", i), Description: "ssh"})
	}
	lb, _ := h.cloud(t, "").LoadBalancer()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatalf("NLB sync with the node group at its rule quota: %v", err)
	}
	g, _ := h.fake.Group(fakeaws.NodeGroup)
	if len(g.Rules) != fakeaws.DefaultRulesPerGroup || !slices.ContainsFunc(g.Rules, func(r fakeaws.Rule) bool { return r.From == 30080 && r.CIDR == "192.0.2.0/24" }) {
		t.Errorf("node group: %d rules %v, want %d with the client rule", len(g.Rules), g.Rules, fakeaws.DefaultRulesPerGroup)
	}
	if got := icmpRules(t, h); len(got) != 0 {
		t.Errorf("ICMP rules %v past the quota", got)
	}
	if !registered(t, h, svc, 2) {
		t.Error("targets not registered")
	}
	if ok, evs := h.events.Await(svc, 5*time.Second, "Warning", reasonNLBMTURuleNotAdded, fakeaws.NodeGroup, "RulesPerSecurityGroupLimitExceeded"); !ok {
		t.Errorf("no Warning naming the group and the quota: %v", evs)
	}

	h.fake.SetRulesPerGroupLimit(fakeaws.DefaultRulesPerGroup + 1)
	calls := h.fake.Calls()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	want := []fakeaws.Rule{{Protocol: "icmp", From: 3, To: 4, CIDR: "192.0.2.0/24", Description: sgrules.MTUDescription("lim")}}
	if got := icmpRules(t, h); !slices.Equal(got, want) {
		t.Errorf("quota raised: ICMP rules %v, want %v", got, want)
	}
	if n := h.fake.Calls()["ec2:AuthorizeSecurityGroupIngress"] - calls["ec2:AuthorizeSecurityGroupIngress"]; n != 1 {
		t.Errorf("quota raised: %d AuthorizeSecurityGroupIngress, want 1 (the MTU rule)", n)
	}
}

// Another writer (upstream in another cluster sharing the node group) adds the same MTU rule:
// before ccm reads the group under its lock, ccm finds it there and writes none; after,
// AWS answers InvalidPermission.Duplicate: a Warning, not a failure. Either way the next sync
// writes nothing (upstream's rule admits the range while a client rule needs it).
func TestNLBMTURuleAddedMeanwhile(t *testing.T) {
	upMTU := fakeaws.Rule{Protocol: "icmp", From: 3, To: 4, CIDR: "192.0.2.0/24", Description: fakeaws.NLBMTUDescription}
	for _, tc := range []struct {
		name string
		// clientFirst: the rule lands just before the first Authorize made once the group holds
		// the NLB's client rule (after ccm's read); otherwise before the first Authorize.
		clientFirst bool
		warning     bool
	}{
		{name: "before the read", clientFirst: false, warning: false},
		{name: "between the read and the write", clientFirst: true, warning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "dup")
			ctx := context.Background()
			nodes := mtuNodes(h, "dup-a", "dup-b")
			svc := mtuService("a", 30080, "192.0.2.0/24")
			landed := false
			h.fake.SetFaults(fakeaws.Faults{Interpose: map[string]func() bool{"AuthorizeSecurityGroupIngress": func() bool {
				g, _ := h.fake.Group(fakeaws.NodeGroup)
				if tc.clientFirst && !slices.ContainsFunc(g.Rules, func(r fakeaws.Rule) bool { return r.From == 30080 }) {
					return false
				}
				h.fake.AddGroupRule(fakeaws.NodeGroup, upMTU)
				landed = true
				return true
			}}})
			lb, _ := h.cloud(t, "").LoadBalancer()
			if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
				t.Fatalf("NLB sync with the MTU rule added meanwhile: %v", err)
			}
			if !landed {
				t.Fatal("the other writer's rule never landed")
			}
			if !registered(t, h, svc, 2) {
				t.Error("targets not registered")
			}
			if got := icmpRules(t, h); !slices.Equal(got, []fakeaws.Rule{upMTU}) {
				t.Errorf("ICMP rules %v, want the other writer's %v", got, upMTU)
			}
			found := slices.ContainsFunc(h.events.On(svc), func(e string) bool {
				return strings.Contains(e, reasonNLBMTURuleNotAdded) && strings.Contains(e, "InvalidPermission.Duplicate")
			})
			if found != tc.warning {
				t.Errorf("Duplicate Warning %v, want %v: %v", found, tc.warning, h.events.On(svc))
			}
			w := h.fake.Writes()
			if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
				t.Fatal(err)
			}
			if d := h.fake.Writes() - w; d != 0 {
				t.Errorf("next sync made %d writes", d)
			}
		})
	}
}

// Two syncs of one range race: A's delete drops the range's last client rule (from its read)
// while B's sync adds one. The MTU rule is decided under the group's lock from the group as it
// is then: held here while B's client rule lands, the delete keeps the rule B needs.
func TestNLBMTURuleDecidedUnderGroupLock(t *testing.T) {
	h := newHarness(t, "race")
	ctx := context.Background()
	nodes := mtuNodes(h, "race-a", "race-b")
	a := mtuService("a", 30080, "10.0.0.0/8")
	c, _ := h.cloud(t, "").LoadBalancer()
	lb := c.(*loadBalancers)
	if _, err := lb.EnsureLoadBalancer(ctx, "x", a, nodes); err != nil {
		t.Fatal(err)
	}
	want := []fakeaws.Rule{{Protocol: "icmp", From: 3, To: 4, CIDR: "10.0.0.0/8", Description: sgrules.MTUDescription("race")}}
	if got := icmpRules(t, h); !slices.Equal(got, want) {
		t.Fatalf("ICMP rules %v, want %v", got, want)
	}
	clientOf := func(port int) bool {
		g, _ := h.fake.Group(fakeaws.NodeGroup)
		return slices.ContainsFunc(g.Rules, func(r fakeaws.Rule) bool { return r.From == port && r.CIDR == "10.0.0.0/8" })
	}

	unlock := lb.groupKeys.Lock(fakeaws.NodeGroup)
	done := make(chan error, 1)
	go func() { done <- lb.EnsureLoadBalancerDeleted(ctx, "x", a) }()
	deadline := time.Now().Add(10 * time.Second)
	for clientOf(30080) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if clientOf(30080) {
		t.Fatal("A's client rule was not revoked")
	}
	// B's sync adds its client rule of the same range now.
	b := ownership.Identity{Cluster: "race", Namespace: "ns", Name: "b", UID: "uid-b"}
	h.fake.AddGroupRule(fakeaws.NodeGroup, fakeaws.Rule{Protocol: "tcp", From: 30180, To: 30180, CIDR: "10.0.0.0/8", Description: ruleDescription(b, "client")})
	var err error
	select {
	case err = <-done:
		t.Errorf("the delete decided the MTU rules without the group's lock")
		unlock()
	case <-time.After(50 * time.Millisecond):
		unlock()
		err = <-done
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := icmpRules(t, h); !slices.Equal(got, want) {
		t.Errorf("after A's delete, with B's client rule: ICMP rules %v, want %v", got, want)
	}
}
