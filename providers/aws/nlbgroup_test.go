package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

const managedMode = "[Global]\nNLBSecurityGroupMode = Managed\n"

// groupRules are a group's rules as "protocol from-to cidr", sorted, descriptions left out.
func groupRules(t *testing.T, h *harness, id string) []string {
	t.Helper()
	g, ok := h.fake.Group(id)
	if !ok {
		t.Fatalf("group %s is gone", id)
	}
	var out []string
	for _, r := range g.Rules {
		r.Description = ""
		out = append(out, r.String())
	}
	sort.Strings(out)
	return out
}

// NLBSecurityGroupMode = Managed: a new NLB is created with a group of its own (ccm's name and
// ownership tags) admitting the source ranges on the listener ports (TCP, UDP) and ICMP 3-4;
// an unchanged sync writes nothing; a source range change writes only the rule difference;
// a scheme change recreates the NLB with the same group; the delete removes the group after
// the NLB. Without the mode, NLBs get no group.
func TestNLBManagedGroupLifecycle(t *testing.T) {
	h := newHarness(t, "nlbsg")
	ctx := context.Background()
	c := h.cloud(t, managedMode)
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "sg-a", "sg-b")
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb"})
	svc.UID = "uid-web"
	svc.Spec.LoadBalancerSourceRanges = []string{"10.1.0.0/16"}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	name := c.lb.name(svc)
	nlb, _, _, ok := h.fake.NLBByName(name)
	if !ok || len(nlb.SecurityGroups) != 1 {
		t.Fatalf("NLB %v: want one security group", nlb.SecurityGroups)
	}
	gid := nlb.SecurityGroups[0]
	g, _ := h.fake.Group(gid)
	var tags map[string]string
	for _, sg := range h.fake.SecurityGroups() {
		if sg.ID == gid {
			tags = sg.Tags
		}
	}
	if g.Name != nlbGroupName(name) || !ownership.Is(c.lb.identity(svc), tags) {
		t.Errorf("group %s tags %v: want %s with the Service's ownership tags", g.Name, tags, nlbGroupName(name))
	}
	want := []string{"icmp 3-4 from 10.1.0.0/16", "tcp 80-80 from 10.1.0.0/16", "udp 53-53 from 10.1.0.0/16"}
	if got := groupRules(t, h, gid); !slices.Equal(got, want) {
		t.Errorf("group rules %v, want %v", got, want)
	}

	w0 := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w0 {
		t.Errorf("unchanged sync: %v, %d writes; want none", err, h.fake.Writes()-w0)
	}
	restarted, _ := h.cloud(t, managedMode).LoadBalancer()
	if _, err := restarted.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w0 {
		t.Errorf("after a restart: %v, %d writes; want none", err, h.fake.Writes()-w0)
	}

	svc.Spec.LoadBalancerSourceRanges = []string{"10.2.0.0/16"}
	ops := h.fake.Operations()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	after := h.fake.Operations()
	want = []string{"icmp 3-4 from 10.2.0.0/16", "tcp 80-80 from 10.2.0.0/16", "udp 53-53 from 10.2.0.0/16"}
	if got := groupRules(t, h, gid); !slices.Equal(got, want) {
		t.Errorf("after the source range change: %v, want %v", got, want)
	}
	if d := after["ec2:CreateSecurityGroup"] - ops["ec2:CreateSecurityGroup"]; d != 0 || after["elbv2:CreateLoadBalancer"] != ops["elbv2:CreateLoadBalancer"] {
		t.Errorf("source range change created %d groups, %d NLBs; want the same group and NLB", d, after["elbv2:CreateLoadBalancer"]-ops["elbv2:CreateLoadBalancer"])
	}

	// A scheme change recreates the NLB: with the same group.
	svc.Annotations[annotations.Prefix+"internal"] = "true"
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if nlb, _, _, _ := h.fake.NLBByName(name); nlb.Scheme != "internal" || !slices.Equal(nlb.SecurityGroups, []string{gid}) {
		t.Errorf("recreated NLB: scheme %s groups %v, want internal with [%s]", nlb.Scheme, nlb.SecurityGroups, gid)
	}

	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.fake.Group(gid); ok {
		t.Errorf("group %s left after the delete", gid)
	}
	if _, _, _, ok := h.fake.NLBByName(name); ok {
		t.Errorf("NLB left after the delete")
	}

	// Without the mode: no group, as before.
	plain, _ := h.cloud(t, "").LoadBalancer()
	other := lbService("plain", map[string]string{annotations.Prefix + "type": "nlb"})
	if _, err := plain.EnsureLoadBalancer(ctx, "x", other, nodes); err != nil {
		t.Fatal(err)
	}
	if nlb, _, _, _ := h.fake.NLBByName(c.lb.name(other)); len(nlb.SecurityGroups) != 0 {
		t.Errorf("NLB without the mode has groups %v", nlb.SecurityGroups)
	}
}

// A group named like ccm's for the NLB about to be created but made by someone else stops the
// creation before anything is written.
func TestNLBManagedGroupNotOursRefused(t *testing.T) {
	h := newHarness(t, "nlbsg")
	ctx := context.Background()
	c := h.cloud(t, managedMode)
	lb, _ := c.LoadBalancer()
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb"})
	h.fake.AddSecurityGroup(nlbGroupName(c.lb.name(svc)), "someone's", map[string]string{"kubernetes.io/cluster/nlbsg": "owned", ownership.ServiceTag: "ns/other"})
	w0 := h.fake.Writes()
	_, err := lb.EnsureLoadBalancer(ctx, "x", svc, parityNodes(h, "sg-a"))
	if !errors.Is(err, ownership.ErrNotOwned) || h.fake.Writes() != w0 {
		t.Errorf("foreign group: %v, %d writes; want a refusal and no write", err, h.fake.Writes()-w0)
	}
}

// The upstream CCM ran with NLBSecurityGroupMode = Managed: its NLB's group (its name, its
// description, the cluster tag only) is taken over in place by ccm in the same mode: same
// group, still the NLB's, ccm's ownership tags added, its rules kept (no rule written: they
// are the ones ccm wants), no NLB or group created, nothing serving deleted, no Warning; the
// next sync writes nothing; the delete removes the group after the NLB. Without the mode in
// ccm, the group is left on the NLB as it is, and still deleted with it.
func TestUpstreamManagedNLBGroupTakenOver(t *testing.T) {
	for _, mode := range []string{managedMode, ""} {
		h := newHarness(t, migCluster)
		ctx := context.Background()
		nodes := migNodes(h)
		svc := migService(7, true)
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: "alt", Port: 8080, NodePort: 30953, Protocol: v1.ProtocolTCP})
		u := h.upstreamOf(migCluster, svc, nodes)
		u.NLB, u.ManagedSG = true, true
		addr := h.fake.SeedUpstream(u)
		up := fakeaws.UpstreamLBName(string(svc.UID))
		nlb, _, _, _ := h.fake.NLBByName(up)
		gid := nlb.SecurityGroups[0]
		g, _ := h.fake.Group(gid)
		if g.Name != fakeaws.UpstreamNLBGroupName(migCluster, svc.Namespace, svc.Name, string(svc.UID)) {
			t.Fatalf("seeded group %s", g.Name)
		}
		rules0 := groupRules(t, h, gid)

		lb, _ := h.cloud(t, mode).LoadBalancer()
		ops0 := h.fake.Operations()
		st := ensureOK(t, lb, svc, nodes)
		ops := h.fake.Operations()
		d := func(op string) int { return ops[op] - ops0[op] }
		if c, del := servingChanges(ops); c != 0 || del != 0 || st.Ingress[0].Hostname != addr {
			t.Errorf("mode %q: %d creates, %d serving deletes, address %s (upstream's %s)", mode, c, del, st.Ingress[0].Hostname, addr)
		}
		if d("ec2:CreateSecurityGroup") != 0 || d("ec2:AuthorizeSecurityGroupIngress") != 0 || d("ec2:RevokeSecurityGroupIngress") != 0 {
			t.Errorf("mode %q takeover: CreateSecurityGroup %d, Authorize %d, Revoke %d", mode, d("ec2:CreateSecurityGroup"), d("ec2:AuthorizeSecurityGroupIngress"), d("ec2:RevokeSecurityGroupIngress"))
		}
		nlb, _, _, _ = h.fake.NLBByName(up)
		var tags map[string]string
		for _, sg := range h.fake.SecurityGroups() {
			if sg.ID == gid {
				tags = sg.Tags
			}
		}
		owned := ownership.Is(ownership.Of(migCluster, svc), tags)
		if !slices.Equal(nlb.SecurityGroups, []string{gid}) || owned != (mode != "") || !slices.Equal(groupRules(t, h, gid), rules0) {
			t.Errorf("mode %q: NLB groups %v (want [%s]), ccm's tags %v, rules %v (upstream's %v)", mode, nlb.SecurityGroups, gid, owned, groupRules(t, h, gid), rules0)
		}
		for _, e := range h.events.On(svc) {
			if len(e) >= len(v1.EventTypeWarning) && e[:len(v1.EventTypeWarning)] == v1.EventTypeWarning {
				t.Errorf("mode %q: %s", mode, e)
			}
		}
		w0 := h.fake.Writes()
		ensureOK(t, lb, svc, nodes)
		if h.fake.Writes() != w0 {
			t.Errorf("mode %q: the sync after the takeover wrote %d", mode, h.fake.Writes()-w0)
		}
		if err := lb.EnsureLoadBalancerDeleted(ctx, migCluster, svc); err != nil {
			var retry *api.RetryError
			if !errors.As(err, &retry) {
				t.Fatal(err)
			}
		}
		if _, ok := h.fake.Group(gid); ok {
			t.Errorf("mode %q: upstream's NLB group left after the delete", mode)
		}
		if left := h.Remains(t, migCluster, svc); len(left) != 0 {
			t.Errorf("mode %q: left after the delete: %v", mode, left)
		}
	}
}

// A delete interrupted after the NLB went (the group was still in use, or ccm was stopped):
// the next delete finds the group by its name and ownership tags, and removes it.
func TestNLBManagedGroupInterruptedDelete(t *testing.T) {
	h := newHarness(t, "nlbsg")
	ctx := context.Background()
	c := h.cloud(t, managedMode)
	lb, _ := c.LoadBalancer()
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb"})
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, parityNodes(h, "sg-a")); err != nil {
		t.Fatal(err)
	}
	nlb, _, _, _ := h.fake.NLBByName(c.lb.name(svc))
	gid := nlb.SecurityGroups[0]
	_, err := h.operator().elbv2.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(nlb.ARN)})
	must(t, "DeleteLoadBalancer", err)
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.fake.Group(gid); ok {
		t.Errorf("group %s left after the delete", gid)
	}
}

// nlbGroupRules, the pure part: TCP for TCP and TLS listeners, UDP for UDP, each from every
// source range; ICMP 3-4 from the IPv4 ranges only; one rule per port and range.
func TestNLBGroupRules(t *testing.T) {
	id := ownership.Identity{Cluster: "c", Namespace: "ns", Name: "web", UID: "u"}
	for _, tc := range []struct {
		ports  []nlbPort
		ranges []string
		want   []string
	}{
		{[]nlbPort{{Protocol: "TCP", Port: 80}}, []string{"0.0.0.0/0"}, []string{"icmp 3-4 0.0.0.0/0", "tcp 80-80 0.0.0.0/0"}},
		{[]nlbPort{{Protocol: "TLS", Port: 443}, {Protocol: "UDP", Port: 53}}, []string{"10.0.0.0/8", "2001:db8::/32"},
			[]string{"icmp 3-4 10.0.0.0/8", "tcp 443-443 10.0.0.0/8", "tcp 443-443 2001:db8::/32", "udp 53-53 10.0.0.0/8", "udp 53-53 2001:db8::/32"}},
		{nil, []string{"0.0.0.0/0"}, []string{"icmp 3-4 0.0.0.0/0"}},
	} {
		var got []string
		for _, r := range nlbGroupRules(id, &nlbDesired{Ports: tc.ports, SourceRanges: tc.ranges}) {
			if r.Desc != ruleDescription(id, "client") {
				t.Errorf("rule %v: description %q", r, r.Desc)
			}
			got = append(got, fmt.Sprintf("%s %d-%d %s", r.Proto, r.From, r.To, r.CIDR))
		}
		sort.Strings(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("ports %v ranges %v: %v, want %v", tc.ports, tc.ranges, got, tc.want)
		}
	}
}

// Upstream's group is recognised by the exact name upstream derives from the cluster name and
// the Service's UID (compared with the fake's own derivation), so an upstream-style group of
// another Service (same description and cluster tag) is never taken for this one's.
func TestUpstreamNLBGroupIsTheServicesOwn(t *testing.T) {
	l := &loadBalancers{}
	l.clusterName.Store(migCluster)
	svc := migService(3, true)
	id := ownership.Of(migCluster, svc)
	group := func(name string) *types.SecurityGroup {
		return &types.SecurityGroup{GroupName: aws.String(name), Description: aws.String(upstream.NLBGroupDescription),
			Tags: []types.Tag{{Key: aws.String(ownership.ClusterTagPrefix + migCluster), Value: aws.String("owned")}}}
	}
	own := fakeaws.UpstreamNLBGroupName(migCluster, svc.Namespace, svc.Name, string(svc.UID))
	if got := upstream.NLBGroupName(migCluster, svc); got != own {
		t.Fatalf("upstream.NLBGroupName = %s, the fake's derivation %s", got, own)
	}
	other := fakeaws.UpstreamNLBGroupName(migCluster, svc.Namespace, svc.Name, "another-uid")
	otherCluster := fakeaws.UpstreamNLBGroupName("kubernetes", svc.Namespace, svc.Name, string(svc.UID))
	for name, want := range map[string]bool{own: true, other: false, otherCluster: false} {
		if got := l.isUpstreamNLBGroup(id, svc, group(name)); got != want {
			t.Errorf("group %s: %v, want %v", name, got, want)
		}
	}
}

// AWS refusing a group (InvalidSecurityGroup) is the annotation's fault only when the
// annotation named the groups; refusing the Service's own group is reported as AWS's answer.
func TestSetNLBGroupsError(t *testing.T) {
	invalid := &smithy.GenericAPIError{Code: "InvalidSecurityGroup", Message: "sg-1 is not in vpc-1"}
	other := &smithy.GenericAPIError{Code: "InvalidConfigurationRequest"}
	for _, c := range []struct {
		named     bool
		err       error
		annotated bool
	}{
		{true, invalid, true},
		{false, invalid, false},
		{true, other, false},
		{false, other, false},
	} {
		err := setNLBGroupsError("k8s-x", c.named, c.err)
		if got := strings.Contains(err.Error(), annotations.Prefix+annotations.SecurityGroup); got != c.annotated || !strings.Contains(err.Error(), c.err.Error()) {
			t.Errorf("named %v, %v: %v; want naming the annotation %v", c.named, c.err, err, c.annotated)
		}
	}
}
