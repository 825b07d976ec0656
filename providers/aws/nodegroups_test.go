package aws

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/ownership"
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
