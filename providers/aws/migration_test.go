package aws

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// migCluster is the cluster ID every test here runs ccm with.
const migCluster = "prod"

// migNodes are two running instances as Nodes with providerIDs (as upstream left them).
func migNodes(h *harness) []*v1.Node {
	var nodes []*v1.Node
	for _, n := range []string{"mig-a", "mig-b"} {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	return nodes
}

// migService is a Service with an API-server-shaped UID (a UUID), one TCP port.
func migService(i int, nlb bool) *v1.Service {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: fmt.Sprintf("web-%d", i), Annotations: map[string]string{},
		UID: types.UID(fmt.Sprintf("%08x-4b5a-4c6d-8e7f-6f1c2d3e4b5a", 0x6f1c0000+i))},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: int32(30000 + i), Protocol: v1.ProtocolTCP}}}}
	if nlb {
		svc.Annotations[annotations.Prefix+annotations.Type] = "nlb"
	}
	return svc
}

// seedAs leaves upstream's load balancer for svc, made for cluster, and returns its DNS name.
func seedAs(h *harness, cluster string, svc *v1.Service, nodes []*v1.Node) string {
	old := h.upstreamNLB
	h.upstreamNLB = svc.Annotations[annotations.Prefix+annotations.Type] == "nlb"
	defer func() { h.upstreamNLB = old }()
	return strings.ToLower(h.fake.SeedUpstream(h.upstreamOf(cluster, svc, nodes)))
}

func reads(calls map[string]int) int {
	n := 0
	for op, c := range calls {
		if _, action, _ := strings.Cut(op, ":"); strings.HasPrefix(action, "Describe") {
			n += c
		}
	}
	return n
}

func ensureOK(t *testing.T, lb cloudprovider.LoadBalancer, svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	t.Helper()
	st, err := lb.EnsureLoadBalancer(context.Background(), migCluster, svc, nodes)
	if err != nil {
		t.Fatalf("%s: %v", svc.Name, err)
	}
	return st
}

// tlsService adds to svc a port https 443 that ssl-ports makes TLS, with a TLS target group.
func tlsService(svc *v1.Service, i int) {
	svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "https", Port: 443, NodePort: int32(31000 + i), Protocol: v1.ProtocolTCP})
	svc.Annotations[annotations.Prefix+annotations.SSLCert] = "arn:aws:acm:us-east-1:123456789012:certificate/mig"
	svc.Annotations[annotations.Prefix+annotations.SSLPorts] = "https"
	svc.Annotations[annotations.Prefix+annotations.Backend] = "ssl"
}

// N classic ELBs and N NLBs left by the upstream CCM (N = CCM_MIGRATION_LBS, default 5): the
// first sync of a fresh ccm creates no load balancer, deletes nothing that serves, keeps every
// DNS name, leaves nothing of upstream's unused, reports no Warning; the next sync, and a
// restart, write nothing. The figures (writes and reads per load balancer) are logged.
func TestUpstreamTakeoverInPlace(t *testing.T) {
	n := 5
	if v, err := strconv.Atoi(os.Getenv("CCM_MIGRATION_LBS")); err == nil && v > 0 {
		n = v
	}
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	var svcs []*v1.Service
	var addrs []string
	for i := range 2 * n {
		svc := migService(i, i >= n)
		if i >= n && i%2 == 1 {
			// Every other NLB: a TLS listener on 443 with a TLS target group (backend-protocol
			// ssl), its target group named by upstream with the protocol in the hash.
			tlsService(svc, i)
		}
		addrs = append(addrs, seedAs(h, migCluster, svc, nodes))
		svcs = append(svcs, svc)
	}
	lb, _ := h.cloud(t, "").LoadBalancer()
	type figure struct{ writes, reads int }
	pass := func() [2]figure { // classic, NLB
		var f [2]figure
		for i, svc := range svcs {
			c0, w0 := h.fake.Calls(), h.fake.Writes()
			st := ensureOK(t, lb, svc, nodes)
			if got := st.Ingress[0].Hostname; got != addrs[i] {
				t.Errorf("%s: address %s, want upstream's %s", svc.Name, got, addrs[i])
			}
			k := i / n
			f[k].writes += h.fake.Writes() - w0
			f[k].reads += reads(h.fake.Calls()) - reads(c0)
		}
		return f
	}
	takeover := pass()
	if c, d := servingChanges(h.fake.Calls()); c != 0 || d != 0 {
		t.Errorf("takeover: %d load balancer creates, %d deletes of serving resources, want 0 and 0", c, d)
	}
	if calls := h.fake.Calls(); calls["elbv2:CreateTargetGroup"] != 0 || calls["elbv2:ModifyListener"] != 0 {
		t.Errorf("takeover: %d target groups created, %d listeners modified; want upstream's kept as they are",
			calls["elbv2:CreateTargetGroup"], calls["elbv2:ModifyListener"])
	}
	for i, svc := range svcs[n:] {
		_, ls, tgs, _ := h.fake.NLBByName(fakeaws.UpstreamLBName(string(svc.UID)))
		var got []string
		for j, l := range ls {
			got = append(got, fmt.Sprintf("%s/%d->%s", l.Protocol, l.Port, tgs[j].Protocol))
		}
		slices.Sort(got)
		want := []string{"TCP/80->TCP"}
		if (n+i)%2 == 1 {
			want = []string{"TCP/80->TCP", "TLS/443->TLS"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: listeners %v, want %v", svc.Name, got, want)
		}
	}
	for _, svc := range svcs {
		if left := h.Leftovers(t, migCluster, svc); len(left) != 0 {
			t.Errorf("%s: upstream's %q left after the takeover", svc.Name, left)
		}
	}
	next := pass()
	lb2, _ := h.cloud(t, "").LoadBalancer() // a restart
	lb = lb2
	restart := pass()
	for k, kind := range []string{"classic ELB", "NLB"} {
		if next[k].writes != 0 || restart[k].writes != 0 {
			t.Errorf("%s: the syncs after the takeover wrote %d, a restart %d; want 0", kind, next[k].writes, restart[k].writes)
		}
		t.Logf("%d upstream %ss: takeover %.1f writes / %.1f reads per LB; next sync %d writes / %.1f reads per LB; restart %d writes / %.1f reads per LB",
			n, kind, float64(takeover[k].writes)/float64(n), float64(takeover[k].reads)/float64(n),
			next[k].writes, float64(next[k].reads)/float64(n), restart[k].writes, float64(restart[k].reads)/float64(n))
	}
	for _, svc := range svcs {
		for _, e := range h.events.On(svc) {
			if strings.HasPrefix(e, v1.EventTypeWarning) {
				t.Errorf("%s: %s", svc.Name, e)
			}
		}
	}
	if c, d := servingChanges(h.fake.Calls()); c != 0 || d != 0 {
		t.Errorf("after the resyncs: %d creates, %d serving deletes", c, d)
	}
}

// What the takeover writes, one classic ELB: ccm's tags on the ELB and on upstream's group
// (kept, same ID, still the ELB's), its node rule from that group added before upstream's
// all-traffic rule is revoked, upstream's ICMP rule in the ELB's group retired. One NLB: ccm's
// tags on the NLB and its target group (kept, same listener), upstream's client rule
// re-described in place (never revoked), upstream's MTU rule kept as it is, no new target group
// or listener.
func TestUpstreamTakeoverWrites(t *testing.T) {
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	classic, nlb := migService(1, false), migService(2, true)
	seedAs(h, migCluster, classic, nodes)
	seedAs(h, migCluster, nlb, nodes)
	up := fakeaws.UpstreamLBName(string(classic.UID))
	sg, _ := h.fake.GroupByName("k8s-elb-" + up)
	lb, _ := h.cloud(t, "").LoadBalancer()

	ops0 := h.fake.Calls()
	ensureOK(t, lb, classic, nodes)
	ops := h.fake.Calls()
	diff := func(op string) int { return ops[op] - ops0[op] }
	if diff("ec2:CreateTags") != 1 || diff("ec2:AuthorizeSecurityGroupIngress") != 1 || diff("ec2:RevokeSecurityGroupIngress") != 2 ||
		diff("elb:AddTags") != 1 || diff("ec2:CreateSecurityGroup") != 0 || diff("elb:ApplySecurityGroupsToLoadBalancer") != 0 {
		t.Errorf("classic takeover calls: %v", ops)
	}
	elb, _ := h.fake.ClassicLB(up)
	id := ownership.Of(migCluster, classic)
	if !slices.Equal(elb.SecurityGroups, []string{sg}) || !ownership.Is(id, elb.Tags) || elb.Tags[ownership.ServiceUIDTag] != string(classic.UID) {
		t.Errorf("ELB after the takeover: groups %v tags %v", elb.SecurityGroups, elb.Tags)
	}
	g, _ := h.fake.Group(fakeaws.NodeGroup)
	want := fakeaws.Rule{Protocol: "tcp", From: 30001, To: 30001, SourceSG: sg, Description: ruleDescription(id, "elb")}
	if !slices.Contains(g.Rules, want) || slices.ContainsFunc(g.Rules, func(r fakeaws.Rule) bool { return r.SourceSG == sg && r.Protocol == "-1" }) {
		t.Errorf("node group rules %v: want %v and no all-traffic rule from %s", g.Rules, want, sg)
	}
	own, _ := h.fake.Group(sg)
	if slices.ContainsFunc(own.Rules, func(r fakeaws.Rule) bool { return r.Protocol == "icmp" }) || len(own.Rules) != 1 {
		t.Errorf("ELB group rules %v: want upstream's listener rule only", own.Rules)
	}

	ops0 = h.fake.Calls()
	ensureOK(t, lb, nlb, nodes)
	ops = h.fake.Calls()
	if diff("elbv2:AddTags") != 2 || diff("ec2:UpdateSecurityGroupRuleDescriptionsIngress") != 1 || diff("ec2:RevokeSecurityGroupIngress") != 0 || diff("ec2:AuthorizeSecurityGroupIngress") != 0 ||
		diff("elbv2:CreateTargetGroup") != 0 || diff("elbv2:CreateListener") != 0 || diff("elbv2:RegisterTargets") != 0 {
		t.Errorf("NLB takeover calls: %v", ops)
	}
	nid := ownership.Of(migCluster, nlb)
	g, _ = h.fake.Group(fakeaws.NodeGroup)
	client := fakeaws.Rule{Protocol: "tcp", From: 30002, To: 30002, CIDR: "0.0.0.0/0", Description: ruleDescription(nid, "client")}
	if !slices.Contains(g.Rules, client) {
		t.Errorf("node group rules %v lack %v", g.Rules, client)
	}
	// Upstream's shared MTU rule stays as it is while a client rule of its range is there (no
	// rule of ccm's added beside it); it goes with the last NLB (TestUpstreamMTURuleGoesWithTheLastNLB).
	if !slices.ContainsFunc(g.Rules, func(r fakeaws.Rule) bool { return r.Description == fakeaws.NLBMTUDescription }) ||
		slices.ContainsFunc(g.Rules, func(r fakeaws.Rule) bool { return r.Protocol == "icmp" && r.Description != fakeaws.NLBMTUDescription }) {
		t.Errorf("upstream's shared MTU rule was removed or doubled: %v", g.Rules)
	}
}

// An NLB of an externalTrafficPolicy Local Service: upstream's health rule (from the NLB's
// subnets on the health check nodePort) is retired once ccm's rule for that port is there.
func TestUpstreamNLBHealthRuleRetired(t *testing.T) {
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	svc := migService(3, true)
	svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32100
	addr := seedAs(h, migCluster, svc, nodes)
	up := fakeaws.UpstreamLBName(string(svc.UID))
	g, _ := h.fake.Group(fakeaws.NodeGroup)
	if !slices.ContainsFunc(g.Rules, func(r fakeaws.Rule) bool { return r.Description == fakeaws.NLBRuleDescription("health", up) }) {
		t.Fatalf("seed without a health rule: %v", g.Rules)
	}
	lb, _ := h.cloud(t, "").LoadBalancer()
	if st := ensureOK(t, lb, svc, nodes); st.Ingress[0].Hostname != addr {
		t.Errorf("address %s, want %s", st.Ingress[0].Hostname, addr)
	}
	g, _ = h.fake.Group(fakeaws.NodeGroup)
	// ccm admits the health check nodePort from the NLB's subnets too, never from the clients'
	// ranges: upstream's rules are re-described in place.
	for _, cidr := range []string{"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"} {
		health := fakeaws.Rule{Protocol: "tcp", From: 32100, To: 32100, CIDR: cidr, Description: ruleDescription(ownership.Of(migCluster, svc), "health")}
		if !slices.Contains(g.Rules, health) {
			t.Errorf("node group rules %v lack ccm's health rule %v", g.Rules, health)
		}
	}
	if slices.ContainsFunc(g.Rules, func(r fakeaws.Rule) bool { return r.From == 32100 && r.CIDR == "0.0.0.0/0" }) {
		t.Errorf("the health check nodePort is open to every client: %v", g.Rules)
	}
	if left := h.Leftovers(t, migCluster, svc); len(left) != 0 {
		t.Errorf("left: %q", left)
	}
	if c, d := servingChanges(h.fake.Calls()); c != 0 || d != 0 {
		t.Errorf("%d creates, %d serving deletes", c, d)
	}
}

// An NLB with restricted source ranges and a UDP port (upstream then writes every client rule
// as UDP and admits its health checks from the NLB's subnets on each nodePort): the health
// rules are what ccm wants too (health checks come from the subnets), so they are re-described
// in place, never revoked; the UDP client rule of the TCP port goes only after ccm's TCP rule
// is there.
func TestUpstreamNLBRestrictedRanges(t *testing.T) {
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	svc := migService(10, true)
	svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP})
	addr := seedAs(h, migCluster, svc, nodes)
	up := fakeaws.UpstreamLBName(string(svc.UID))
	g, _ := h.fake.Group(fakeaws.NodeGroup)
	var health []fakeaws.Rule
	for _, r := range g.Rules {
		if r.Description == fakeaws.NLBRuleDescription("health", up) {
			health = append(health, r)
		}
	}
	if len(health) != 6 { // 2 nodePorts x 3 subnets
		t.Fatalf("seeded health rules %v", health)
	}
	lb, _ := h.cloud(t, "").LoadBalancer()
	c0 := h.fake.Calls()
	if st := ensureOK(t, lb, svc, nodes); st.Ingress[0].Hostname != addr {
		t.Errorf("address %s, want %s", st.Ingress[0].Hostname, addr)
	}
	c1 := h.fake.Calls()
	if a, r := c1["ec2:AuthorizeSecurityGroupIngress"]-c0["ec2:AuthorizeSecurityGroupIngress"], c1["ec2:RevokeSecurityGroupIngress"]-c0["ec2:RevokeSecurityGroupIngress"]; a != 1 || r != 1 {
		t.Errorf("%d authorize, %d revoke calls; want 1 and 1 (ccm's TCP client rule, then upstream's UDP one of that port)", a, r)
	}
	g, _ = h.fake.Group(fakeaws.NodeGroup)
	id := ownership.Of(migCluster, svc)
	for _, r := range health {
		r.Description = ruleDescription(id, "health")
		if !slices.Contains(g.Rules, r) {
			t.Errorf("health rule %v missing: %v", r, g.Rules)
		}
	}
	if left := h.Leftovers(t, migCluster, svc); len(left) != 0 {
		t.Errorf("left: %q", left)
	}
	w := h.fake.Writes()
	ensureOK(t, lb, svc, nodes)
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("the next sync wrote %d", d)
	}
}

// A Service deleted before ccm ever synced it (upstream's state untouched) and one deleted
// after the takeover: nothing of either is left, upstream's objects included; a third
// Service's objects stay.
func TestUpstreamStateDeletedWithTheService(t *testing.T) {
	for _, nlb := range []bool{false, true} {
		t.Run(fmt.Sprintf("nlb=%v", nlb), func(t *testing.T) {
			h := newHarness(t, migCluster)
			nodes := migNodes(h)
			never, taken, kept := migService(4, nlb), migService(5, nlb), migService(6, nlb)
			for _, svc := range []*v1.Service{never, taken, kept} {
				seedAs(h, migCluster, svc, nodes)
			}
			lb, _ := h.cloud(t, "").LoadBalancer()
			ensureOK(t, lb, taken, nodes)
			ensureOK(t, lb, kept, nodes)
			for _, svc := range []*v1.Service{never, taken} {
				if _, exists, err := lb.GetLoadBalancer(context.Background(), migCluster, svc); err != nil || !exists {
					t.Errorf("%s: GetLoadBalancer = %v, %v; want it found (the library deletes only what exists)", svc.Name, exists, err)
				}
				deleteUntilGone(t, lb, svc)
				if rest := h.Remains(t, migCluster, svc); len(rest) != 0 {
					t.Errorf("%s: left after its delete: %q", svc.Name, rest)
				}
			}
			if rest := h.Remains(t, migCluster, kept); len(rest) == 0 {
				t.Errorf("the other Service's objects went too")
			}
		})
	}
}

func deleteUntilGone(t *testing.T, lb cloudprovider.LoadBalancer, svc *v1.Service) {
	t.Helper()
	var err error
	for range 100 {
		if err = lb.EnsureLoadBalancerDeleted(context.Background(), migCluster, svc); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond) // a group or target group still in use
	}
	t.Fatalf("%s: not deleted: %v", svc.Name, err)
}

// Upstream's load balancer of another cluster, with this Service's UID in its name (the
// upstream name is the same in every cluster): never taken over, changed or deleted. ccm makes
// its own; deleting the Service leaves the other cluster's load balancer, group and rules.
func TestUpstreamLBOfAnotherClusterNotTouched(t *testing.T) {
	for _, nlb := range []bool{false, true} {
		t.Run(fmt.Sprintf("nlb=%v", nlb), func(t *testing.T) {
			h := newHarness(t, migCluster)
			nodes := migNodes(h)
			svc := migService(7, nlb)
			seedAs(h, "staging", svc, nodes)
			before := h.fake.Dump()
			lb, _ := h.cloud(t, "").LoadBalancer()
			st, err := lb.EnsureLoadBalancer(context.Background(), migCluster, svc, nodes)
			if err != nil && !nlb {
				t.Fatal(err)
			}
			up := fakeaws.UpstreamLBName(string(svc.UID))
			if st != nil && strings.HasPrefix(st.Ingress[0].Hostname, up) {
				t.Errorf("took over the other cluster's load balancer: %v", st.Ingress)
			}
			if c, _ := servingChanges(h.fake.Calls()); c != 1 {
				t.Errorf("%d load balancers created, want ccm's own", c)
			}
			deleteUntilGone(t, lb, svc)
			if after := h.fake.Dump(); !sameLines(before, after) {
				t.Errorf("the other cluster's objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// sameLines: the dumps hold the same lines (the node group's line order aside).
func sameLines(a, b string) bool {
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// A load balancer under this Service's upstream name whose tags name another Service of the
// cluster, and upstream's load balancer of an earlier Service of the same name (another UID,
// so another name): neither is taken over or touched.
func TestUpstreamLBOfAnotherServiceNotAdopted(t *testing.T) {
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	svc := migService(8, false)
	other := migService(9, false)
	other.UID = svc.UID // its upstream LB carries svc's name but other's Service tag
	seedAs(h, migCluster, other, nodes)
	earlier := migService(8, false)
	earlier.UID = "0d9e8f7a-6b5c-4d3e-9f2a-1b0c9d8e7f6a"
	seedAs(h, migCluster, earlier, nodes)
	before := h.fake.Dump()
	lb, _ := h.cloud(t, "").LoadBalancer()
	st := ensureOK(t, lb, svc, nodes)
	if strings.HasPrefix(st.Ingress[0].Hostname, "a") {
		t.Errorf("took over another Service's load balancer: %v", st.Ingress)
	}
	if c, d := servingChanges(h.fake.Calls()); c != 1 || d != 0 {
		t.Errorf("%d creates, %d serving deletes; want ccm's own ELB and nothing deleted", c, d)
	}
	deleteUntilGone(t, lb, svc)
	if after := h.fake.Dump(); !sameLines(before, after) {
		t.Errorf("others' objects changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// upstream's names as the fake derives them (as upstream does) are the ones ccm recognises.
func TestUpstreamNamesMatchTheFake(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: "6f1c2d3e-4b5a-4c6d-8e7f-000000000001"}}
	if n := upstream.LBName(svc); n != "a6f1c2d3e4b5a4c6d8e7f00000000000" || !upstream.IsLBName(n) || n != fakeaws.UpstreamLBName(string(svc.UID)) {
		t.Errorf("upstream name %q", n)
	}
	for _, n := range []string{fakeaws.UpstreamTargetGroupName("prod", "kube-system", "ingress-nginx-controller", 443, 31443, "TCP", "TCP", 30),
		fakeaws.UpstreamTargetGroupName("prod", "a", "b", 53, 30053, "UDP", "HTTP", 10)} {
		if !upstream.IsTGName(n) {
			t.Errorf("upstream target group name %q not recognised", n)
		}
	}
	if upstream.IsTGName(tgNames.Name("prod", "shop/web", "tcp30080")) {
		t.Errorf("ccm's target group name taken for upstream's")
	}
}
