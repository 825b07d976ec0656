package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/reach"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

func TestNodeGroupOfAsUpstream(t *testing.T) {
	tagged := func(g string) bool { return strings.HasPrefix(g, "sg-t") }
	for _, tc := range []struct {
		groups []string
		want   string
		err    string
	}{
		{nil, "", ""},
		{[]string{"sg-u1"}, "sg-u1", ""},
		{[]string{"sg-t1"}, "sg-t1", ""},
		{[]string{"sg-u1", "sg-t1"}, "sg-t1", ""},
		{[]string{"sg-t1", "sg-u1", "sg-u2"}, "sg-t1", ""},
		{[]string{"sg-u1", "sg-u2"}, "", "none is tagged"},
		{[]string{"sg-t1", "sg-t2"}, "", "several security groups tagged for the cluster (sg-t1, sg-t2)"},
	} {
		got, err := nodeGroupOf("i-1", tc.groups, tagged)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("nodeGroupOf(%v) = %q, %v; want %q, %q", tc.groups, got, err, tc.want, tc.err)
		}
	}
}

// An instance in a team's group (first) and the cluster's node group: the rules go into the
// node group, tagged for the cluster, and the team's group is untouched; an instance in two
// groups tagged for the cluster is refused before any write.
func TestNodeRulesGoToTheClusterTaggedGroup(t *testing.T) {
	h := newHarness(t, "nodegroups")
	ctx := context.Background()
	lb, _ := h.cloud(t, "").LoadBalancer()
	team := h.fake.AddSecurityGroup("team-db", "a team's group", map[string]string{"team": "db"},
		fakeaws.Rule{Protocol: "tcp", From: 5432, To: 5432, CIDR: "10.0.0.0/8"})
	inst := func(name string, groups ...string) *v1.Node {
		id := h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1a", PrivateDNS: name, Groups: groups,
			ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{"10.0.9." + name[len(name)-1:]}}}})
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id}}
	}
	svc := lbService("web", nil)
	svc.Spec.Ports = svc.Spec.Ports[:1]
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, []*v1.Node{inst("ng-1", team, fakeaws.NodeGroup)}); err != nil {
		t.Fatal(err)
	}
	if g, _ := h.fake.Group(team); len(g.Rules) != 1 {
		t.Errorf("the team's group got rules: %v", g.Rules)
	}
	if g, _ := h.fake.Group(fakeaws.NodeGroup); len(g.Rules) == 0 {
		t.Errorf("the node group got no rule")
	}
	other := h.fake.AddSecurityGroup("second-tagged", "also tagged", map[string]string{ownership.ClusterTagPrefix + "nodegroups": ownership.Shared})
	svc2 := lbService("api", nil)
	svc2.Spec.Ports = svc2.Spec.Ports[:1]
	w := h.fake.Writes()
	_, err := lb.EnsureLoadBalancer(ctx, "x", svc2, []*v1.Node{inst("ng-2", fakeaws.NodeGroup, other)})
	if err == nil || !strings.Contains(err.Error(), "several security groups tagged") || h.fake.Writes() != w {
		t.Errorf("two tagged groups: %v, %d writes", err, h.fake.Writes()-w)
	}
}

// One namespace's NLBs may hold at most NodeSecurityGroupRulesPerNamespace rules (default 40)
// in a shared node group: the Service that would pass it is refused before any write, naming
// the limit, and another namespace's Service is still served. -1 lifts the limit.
func TestNamespaceShareOfNodeGroupRules(t *testing.T) {
	h := newHarness(t, "share")
	h.fake.SetRulesPerGroupLimit(0) // a raised account quota: only ccm's share is tested here
	ctx := context.Background()
	nodes := []*v1.Node{node(h, "share-a")}
	ranges := make([]string, 15)
	for i := range ranges {
		ranges[i] = fmt.Sprintf("198.51.%d.0/24", i)
	}
	nlb := func(ns, name string) *v1.Service {
		svc := lbService(name, map[string]string{annotations.Prefix + annotations.Type: "nlb"})
		svc.Namespace, svc.UID = ns, types.UID("uid-"+ns+"-"+name)
		svc.Spec.Ports = svc.Spec.Ports[:1]
		svc.Spec.LoadBalancerSourceRanges = ranges
		return svc
	}
	lb, _ := h.cloud(t, "").LoadBalancer()
	for _, name := range []string{"a", "b"} {
		ensureOK(t, lb, nlb("team", name), nodes)
	}
	w := h.fake.Writes()
	_, err := lb.EnsureLoadBalancer(ctx, "x", nlb("team", "c"), nodes)
	if err == nil || !strings.Contains(err.Error(), "NodeSecurityGroupRulesPerNamespace") || !errors.Is(err, reach.ErrQuota) {
		t.Errorf("the third Service of the namespace: %v, want a refusal naming the limit", err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("%d writes before the refusal", d)
	}
	ensureOK(t, lb, nlb("other", "c"), nodes)
	// A lower limit later (the namespace is over it): a Service whose rules are there is still
	// reconciled; it only cannot add.
	low, _ := h.cloud(t, "[Global]\nNodeSecurityGroupRulesPerNamespace = 10\n").LoadBalancer()
	ensureOK(t, low, nlb("team", "a"), nodes)
	open, _ := h.cloud(t, "[Global]\nNodeSecurityGroupRulesPerNamespace = -1\n").LoadBalancer()
	ensureOK(t, open, nlb("team", "c"), nodes)
}
