package aws

import (
	"context"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The expected maps follow upstream's getKeyValuePropertiesFromAnnotation
// (aws_loadbalancer.go:122-146): trim the list, split on ",", trim the item, split on "=",
// keep parts[0] -> parts[1] ("" when there is no "="), skip an empty key.
func TestUpstreamKeyValues(t *testing.T) {
	for v, want := range map[string]map[string]string{
		"":                               {},
		"   ":                            {},
		"role=web":                       {"role": "web"},
		"role=":                          {"role": ""},
		"role":                           {"role": ""},
		"k1=v1,k2":                       {"k1": "v1", "k2": ""},
		" k1=v1 , k2=v2 ":                {"k1": "v1", "k2": "v2"},
		"k = v":                          {"k ": " v"}, // inside an item nothing is trimmed
		"k=v=x":                          {"k": "v"},   // after a second "=" the text is dropped
		"=v,k":                           {"k": ""},    // no key: skipped
		",,k=v,":                         {"k": "v"},
		"k=a,k=b":                        {"k": "b"}, // a later key wins
		"a in (b)":                       {"a in (b)": ""},
		"node-role.kubernetes.io/worker": {"node-role.kubernetes.io/worker": ""},
	} {
		if got := upstreamKeyValues(v); !maps.Equal(got, want) {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

// Upstream's filterTargetNodes (aws_loadbalancer.go:1829-1855): every key present, its value
// equal unless the wanted value is "".
func TestNodeLabelFilterSelects(t *testing.T) {
	web, db, bare := map[string]string{"role": "web", "zone": "a"}, map[string]string{"role": "db"}, map[string]string{}
	for _, c := range []struct {
		annotation      string
		web, db, noneOf bool
	}{
		{"", true, true, true},
		{"role=", true, true, false},
		{"role", true, true, false},
		{"role=web", true, false, false},
		{"role=web,zone", true, false, false},
		{"role=,zone=a", true, false, false},
		{"role=web=x", true, false, false},
		{"k = v", false, false, false},
		{"a in (b)", false, false, false},
	} {
		f := nodeLabelFilter(upstreamKeyValues(c.annotation))
		if f.selects(web) != c.web || f.selects(db) != c.db || f.selects(bare) != c.noneOf || f.selects(nil) != c.noneOf {
			t.Errorf("%q: web %v db %v unlabelled %v; want %v %v %v", c.annotation, f.selects(web), f.selects(db), f.selects(bare), c.web, c.db, c.noneOf)
		}
	}
}

// Through the SDK at the fake: "role=" registers every Node labelled role, whatever its value
// (a label selector would take only role=""), and a value a selector cannot parse is no error.
func TestTargetNodeLabelsKeyOnlyRegistersAnyValue(t *testing.T) {
	h := newHarness(t, "tnl")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	var nodes []*v1.Node
	for n, role := range map[string]string{"tn-web": "web", "tn-db": "db", "tn-none": ""} {
		_, md := h.machine(n)
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"zone": "a"}}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}
		if role != "" {
			node.Labels["role"] = role
		}
		nodes = append(nodes, node)
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tnl", Annotations: map[string]string{
		annotationPrefix + "target-node-labels": "role=",
	}}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	e, ok := h.fake.ClassicLB(c.lb.name(svc))
	if !ok {
		t.Fatal("no ELB")
	}
	if len(e.Instances) != 2 {
		t.Errorf("instances %v, want the two Nodes labelled role (web and db)", e.Instances)
	}

	// A value no label selector parses: upstream matches no Node by it, and does not refuse.
	svc.Annotations[annotationPrefix+"target-node-labels"] = "role in (web"
	if err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatalf("target-node-labels %q refused: %v", svc.Annotations[annotationPrefix+"target-node-labels"], err)
	}
	e, _ = h.fake.ClassicLB(c.lb.name(svc))
	if len(e.Instances) != 0 {
		t.Errorf("instances %v, want none (no Node has the label %q)", e.Instances, "role in (web")
	}
}
