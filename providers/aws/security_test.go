package aws

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
	"github.com/ccm-project/ccm/providers/aws/internal/sgrules"
)

// Issue 14: a Service never touches what it does not own, and two clusters in one account
// never collide.

func node(h *harness, name string) *v1.Node {
	_, md := h.machine(name)
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}
}

// covers reports whether the rules of group on proto/port carrying id's description admit
// every IPv4 address (as one rule or as halves).
func covers(t *testing.T, h *harness, id ownership.Identity, proto string, port int) bool {
	t.Helper()
	g, _ := h.fake.Group(fakeaws.NodeGroup)
	var have []string
	for _, r := range g.Rules {
		if r.Protocol == proto && r.From == port && ownership.DescribedBy(id, r.Description) {
			have = append(have, r.CIDR)
		}
	}
	var cover func(p string, depth int) bool
	cover = func(p string, depth int) bool {
		if slices.Contains(have, p) {
			return true
		}
		a, b, ok := sgrules.Halves(p)
		return ok && depth < 8 && cover(a, depth+1) && cover(b, depth+1)
	}
	return cover("0.0.0.0/0", 0)
}

// Two clusters share one node security group, with the same Service (ns/web) on the same
// nodePorts as NLBs: each cluster's rules carry its own description, each admits every client,
// and either cluster's delete leaves the other's rules (and so its clients) in place. Before
// rule descriptions, the second cluster took the first one's rule for its own (same port) and
// its delete revoked it.
func TestNLBTwoClustersShareNodeGroup(t *testing.T) {
	h := newHarness(t, "east")
	ctx := context.Background()
	east := h.cloud(t, "")
	west := h.NewCloudFor(t, "west").(*Cloud)
	eastLB, _ := east.LoadBalancer()
	westLB, _ := west.LoadBalancer()
	eastNodes, westNodes := []*v1.Node{node(h, "east-a")}, []*v1.Node{node(h, "west-a")}
	svc := lbService("web", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	svc.UID = "uid-east"
	twin := svc.DeepCopy()
	twin.UID = "uid-west"
	eastID, westID := east.lb.identity(svc), west.lb.identity(twin)
	ensure := func(lb cloudprovider.LoadBalancer, s *v1.Service, nodes []*v1.Node) {
		t.Helper()
		if _, err := lb.EnsureLoadBalancer(ctx, "x", s, nodes); err != nil {
			t.Fatal(err)
		}
	}
	both := func(id ownership.Identity) bool {
		return covers(t, h, id, "tcp", 30080) && covers(t, h, id, "udp", 30053)
	}
	ensure(eastLB, svc, eastNodes)
	ensure(westLB, twin, westNodes)
	if !both(eastID) || !both(westID) {
		g, _ := h.fake.Group(fakeaws.NodeGroup)
		t.Fatalf("both clusters' rules should admit every client: %v", g.Rules)
	}
	w := h.fake.Writes()
	ensure(westLB, twin, westNodes) // a repeat finds its halves: nothing to write
	ensure(eastLB, svc, eastNodes)
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("repeated ensures made %d writes", d)
	}
	if err := westLB.EnsureLoadBalancerDeleted(ctx, "x", twin); err != nil {
		t.Fatal(err)
	}
	if !both(eastID) || covers(t, h, westID, "tcp", 30080) {
		g, _ := h.fake.Group(fakeaws.NodeGroup)
		t.Fatalf("after the second cluster's delete: %v; want the first one's rules only", g.Rules)
	}
	ensure(westLB, twin, westNodes)
	if err := eastLB.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	g, _ := h.fake.Group(fakeaws.NodeGroup)
	if !both(westID) || covers(t, h, eastID, "tcp", 30080) {
		t.Fatalf("after the first cluster's delete: %v; want the second one's rules, still admitting every client", g.Rules)
	}
	if err := westLB.EnsureLoadBalancerDeleted(ctx, "x", twin); err != nil {
		t.Fatal(err)
	}
	if g, _ := h.fake.Group(fakeaws.NodeGroup); len(g.Rules) != 0 {
		t.Errorf("rules left after both deletes: %v", g.Rules)
	}
}

// The NLB delete path once took the groups and ports to revoke from the NLB's own tags, which
// additional-resource-tags could set. Now those keys are refused, and even a tag pointing at
// another group (written before, or by hand) only says where to look: rules that do not carry
// the Service's description are never revoked.
func TestForgedBookkeepingTagsRevokeNothing(t *testing.T) {
	h := newHarness(t, "forge")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := []*v1.Node{node(h, "forge-a")}
	for _, tags := range []string{nodeGroupsTag + "=sg-x", "ccm.k8s.io/node-ports=30080", "CCM.K8S.IO/x=y", fingerprintTag + "=0"} {
		svc := lbService("bad", map[string]string{annotations.Prefix + annotations.Type: "nlb", annotations.Prefix + annotations.ExtraTags: tags})
		if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err == nil || !strings.Contains(err.Error(), annotations.Prefix+annotations.ExtraTags) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("additional-resource-tags %q: %v, want a refusal naming the annotation", tags, err)
		}
	}
	victimRules := []fakeaws.Rule{
		{Protocol: "tcp", From: 30080, To: 30080, CIDR: "0.0.0.0/0"},
		{Protocol: "udp", From: 30053, To: 30053, CIDR: "0.0.0.0/0", Description: ruleDescription(ownership.Identity{Cluster: "other", Namespace: "ns", Name: "web"}, "client")},
		{Protocol: "-1", CIDR: "10.0.0.0/8", Description: "made by hand"},
	}
	victim := h.fake.AddSecurityGroup("victim", "another cluster's nodes", nil, victimRules...)
	svc := lbService("web", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	nlb, _, _, _ := h.fake.NLBByName(c.lb.name(svc))
	if _, err := c.api.elbv2.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: []string{nlb.ARN},
		Tags: []v2types.Tag{{Key: aws.String(nodeGroupsTag), Value: aws.String(victim + " " + fakeaws.NodeGroup)}}}); err != nil {
		t.Fatal(err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if g, _ := h.fake.Group(victim); !slices.Equal(g.Rules, victimRules) {
		t.Errorf("the group named by a forged tag lost rules: %v, want %v", g.Rules, victimRules)
	}
	if g, _ := h.fake.Group(fakeaws.NodeGroup); len(g.Rules) != 0 {
		t.Errorf("the Service's own rules were left: %v", g.Rules)
	}
}

// security-groups: a group is used only if the Service owns it or the operator allowed it; the
// rules ccm adds for it carry the Service's description and go with the Service; the group
// itself is never changed or deleted.
func TestNamedSecurityGroupAllowedThenCleanedUp(t *testing.T) {
	h := newHarness(t, "named")
	ctx := context.Background()
	c := h.cloud(t, "\n[Global]\nAllowedResourceNamespaces = infra\n")
	lb, _ := c.LoadBalancer()
	nodes := []*v1.Node{node(h, "named-a")}
	own := []fakeaws.Rule{{Protocol: "tcp", From: 443, To: 443, CIDR: "0.0.0.0/0", Description: "the operator's"}}
	shared := h.fake.AddSecurityGroup("shared-elb", "made by the operator", map[string]string{"team": "net"}, own...)
	for ns, ok := range map[string]bool{"infra": true, "shop": false} {
		svc := lbService("web", map[string]string{annotations.Prefix + annotations.SecurityGroup: shared})
		svc.Namespace = ns
		svc.Spec.Ports = svc.Spec.Ports[:1]
		_, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
		if ok != (err == nil) {
			t.Fatalf("namespace %s: %v, want ok=%v", ns, err, ok)
		}
		if !ok {
			if !errors.Is(err, ownership.ErrNotOwned) || !strings.Contains(err.Error(), annotations.Prefix+annotations.SecurityGroup) {
				t.Errorf("refusal %v does not name the annotation", err)
			}
			continue
		}
		g, _ := h.fake.Group(fakeaws.NodeGroup)
		want := fakeaws.Rule{Protocol: "tcp", From: 30080, To: 30080, SourceSG: shared, Description: ruleDescription(c.lb.identity(svc), "elb")}
		if !slices.Equal(g.Rules, []fakeaws.Rule{want}) {
			t.Errorf("node group rules %v, want only %v (the nodePort, from the named group, described)", g.Rules, want)
		}
		if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
			t.Fatal(err)
		}
		if g, _ := h.fake.Group(fakeaws.NodeGroup); len(g.Rules) != 0 {
			t.Errorf("rules for the named group left after the delete: %v", g.Rules)
		}
		if g, ok := h.fake.Group(shared); !ok || !slices.Equal(g.Rules, own) {
			t.Errorf("the named group was changed: %v %v", ok, g.Rules)
		}
	}
}

// An answer without the created object is an error (the next try reads what exists), never a
// panic: upstream indexed [0] into it.
func TestEmptyCreateAnswers(t *testing.T) {
	for _, tc := range []struct{ op, typ string }{
		{"CreateLoadBalancer", "classic"}, {"CreateSecurityGroup", "classic"},
		{"CreateLoadBalancer", "nlb"}, {"CreateTargetGroup", "nlb"},
	} {
		t.Run(tc.op+"-"+tc.typ, func(t *testing.T) {
			h := newHarness(t, "empty")
			lb, _ := h.cloud(t, "").LoadBalancer()
			svc := lbService("web", nil)
			svc.Spec.Ports = svc.Spec.Ports[:1]
			if tc.typ == "nlb" {
				svc.Annotations = map[string]string{annotations.Prefix + annotations.Type: "nlb"}
			}
			h.fake.SetFaults(fakeaws.Faults{EmptyAnswers: map[string]bool{tc.op: true}})
			_, err := lb.EnsureLoadBalancer(context.Background(), "x", svc, []*v1.Node{node(h, "e-a")})
			if err == nil || !strings.Contains(err.Error(), "no result") {
				t.Errorf("empty %s answer: %v, want an error", tc.op, err)
			}
		})
	}
}

// IPv6 source ranges become IPv6 rules (Ipv6Ranges), not CidrIp; a range that is no CIDR is an
// error naming the field.
func TestIPv6SourceRanges(t *testing.T) {
	h := newHarness(t, "six")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := []*v1.Node{node(h, "six-a")}
	for _, typ := range []string{"classic", "nlb"} {
		svc := lbService("web-"+typ, nil)
		svc.Spec.Ports = svc.Spec.Ports[:1]
		svc.Spec.LoadBalancerSourceRanges = []string{"2001:db8::/32", "192.0.2.0/24"}
		if typ == "nlb" {
			svc.Annotations = map[string]string{annotations.Prefix + annotations.Type: "nlb"}
		}
		if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
		group := fakeaws.NodeGroup
		if typ == "classic" {
			e, _ := h.fake.ClassicLB(c.lb.name(svc))
			group = e.SecurityGroups[0]
		}
		g, _ := h.fake.Group(group)
		var cidrs []string
		for _, r := range g.Rules {
			cidrs = append(cidrs, r.CIDR)
		}
		if !slices.Contains(cidrs, "2001:db8::/32") || !slices.Contains(cidrs, "192.0.2.0/24") {
			t.Errorf("%s: rules %v, want one from 2001:db8::/32 and one from 192.0.2.0/24", typ, g.Rules)
		}
		w := h.fake.Writes()
		if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w {
			t.Errorf("%s: repeat: %v, %d writes", typ, err, h.fake.Writes()-w)
		}
	}
	bad := lbService("bad", nil)
	bad.Spec.LoadBalancerSourceRanges = []string{"2001:db8::/200"}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", bad, nodes); err == nil || !strings.Contains(err.Error(), "spec.loadBalancerSourceRanges") {
		t.Errorf("bad range: %v, want an error naming spec.loadBalancerSourceRanges", err)
	}
}

// A refusal by AWS names the caller's role ARN and account; the error a Service's Event shows
// keeps the operation and the error code, not those.
func TestErrorsCarryNoAccountOrARN(t *testing.T) {
	for _, tc := range []struct{ op, typ, code string }{
		{"CreateLoadBalancer", "classic", "AccessDenied"}, {"CreateLoadBalancer", "nlb", "AccessDenied"},
		{"DescribeSecurityGroups", "classic", "UnauthorizedOperation"}, {"DeleteLoadBalancer", "delete", "AccessDenied"},
	} {
		t.Run(tc.op+"-"+tc.typ, func(t *testing.T) {
			h := newHarness(t, "deny")
			ctx := context.Background()
			lb, _ := h.cloud(t, "").LoadBalancer()
			svc := lbService("web", nil)
			svc.Spec.Ports = svc.Spec.Ports[:1]
			if tc.typ == "nlb" {
				svc.Annotations = map[string]string{annotations.Prefix + annotations.Type: "nlb"}
			}
			nodes := []*v1.Node{node(h, "d-a")}
			var err error
			if tc.typ == "delete" {
				if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
					t.Fatal(err)
				}
				h.fake.SetFaults(fakeaws.Faults{DenyOps: map[string]bool{tc.op: true}})
				err = lb.EnsureLoadBalancerDeleted(ctx, "x", svc)
			} else {
				h.fake.SetFaults(fakeaws.Faults{DenyOps: map[string]bool{tc.op: true}})
				_, err = lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, leak := range []string{fakeaws.Account, "arn:aws:sts", "arn:aws:iam", "ccm-controller", "assumed-role"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the error carries %q: %v", leak, err)
				}
			}
			var ae smithy.APIError
			if !strings.Contains(err.Error(), tc.op) || !strings.Contains(err.Error(), tc.code) || !errors.As(err, &ae) || ae.ErrorCode() != tc.code {
				t.Errorf("the error lost the operation or the code %s: %v", tc.code, err)
			}
		})
	}
}

// A k8s-elb group that another cluster (still on upstream, which copies a tenant's
// additional-resource-tags onto its groups verbatim) tagged with this cluster's tag and this
// Service's name, but without its UID, is not this Service's: deleting the Service leaves the
// group and every rule that refers to it.
func TestCopiedTagsWithoutUIDAreNotOwnership(t *testing.T) {
	h := newHarness(t, "copied")
	ctx := context.Background()
	lb, _ := h.cloud(t, "").LoadBalancer()
	nodes := []*v1.Node{node(h, "copied-a")}
	svc := lbService("web", nil)
	svc.Spec.Ports, svc.UID = svc.Spec.Ports[:1], "6f1c0001-0000-4000-8000-000000000001"
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	copied := h.fake.AddSecurityGroup("k8s-elb-a0123456789abcdef0123456789abcd", "Security group for Kubernetes ELB a0123 (other/app)",
		map[string]string{ownership.ClusterTagPrefix + "copied": ownership.Owned, ownership.ServiceTag: svc.Namespace + "/" + svc.Name},
		fakeaws.Rule{Protocol: "tcp", From: 80, To: 80, CIDR: "0.0.0.0/0"})
	theirs := fakeaws.Rule{Protocol: "tcp", From: 31999, To: 31999, SourceSG: copied, Description: "the other cluster's"}
	h.fake.AddGroupRule(fakeaws.NodeGroup, theirs)
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if g, ok := h.fake.Group(copied); !ok || len(g.Rules) != 1 {
		t.Errorf("the other cluster's group was deleted or changed: %v %+v", ok, g)
	}
	if g, _ := h.fake.Group(fakeaws.NodeGroup); !slices.Contains(g.Rules, theirs) {
		t.Errorf("the other cluster's node rule was revoked: %v", g.Rules)
	}
}

// The same for a target group: one an upstream cluster tagged with this cluster's tag and the
// Service's name from a tenant's additional-resource-tags, not attached to the Service's NLB,
// is left by the Service's delete.
func TestCopiedTagsWithoutUIDLeaveTargetGroups(t *testing.T) {
	h := newHarness(t, "copiedtg")
	ctx := context.Background()
	lb, _ := h.cloud(t, "").LoadBalancer()
	nodes := []*v1.Node{node(h, "copiedtg-a")}
	svc := lbService("web", map[string]string{annotations.Prefix + annotations.Type: "nlb"})
	svc.Spec.Ports, svc.UID = svc.Spec.Ports[:1], "6f1c0002-0000-4000-8000-000000000002"
	ensureOK(t, lb, svc, nodes)
	copiedTags := map[string]string{ownership.ClusterTagPrefix + "copiedtg": ownership.Owned, ownership.ServiceTag: svc.Namespace + "/" + svc.Name}
	for _, name := range []string{"k8s-other-app-0123456789", "k8s-tg-app-abcdef0123"} {
		h.fake.AddTargetGroup(name, "TCP", 31999, copiedTags)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Dump(); !strings.Contains(d, "tg k8s-other-app-0123456789 ") || !strings.Contains(d, "tg k8s-tg-app-abcdef0123 ") {
		t.Errorf("a target group with copied tags was deleted:\n%s", d)
	}
}
