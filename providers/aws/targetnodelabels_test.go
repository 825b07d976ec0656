package aws

import (
	"context"
	"maps"
	"strings"
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
// (a label selector would take only role=""); a value written as a selector is refused and the
// targets stay.
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

	// A value written for ccm's earlier reading, a label selector: refused before any write,
	// so the targets stay (read as upstream's list it would match no Node and deregister them).
	for _, v := range []string{"role!=spot", "role in (web,api)", "!spot", "role = web", "role==web"} {
		before := h.fake.Writes()
		svc.Annotations[annotationPrefix+"target-node-labels"] = v
		err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes)
		if err == nil || !strings.Contains(err.Error(), annotationPrefix+"target-node-labels") || !strings.Contains(err.Error(), "not as a label selector") {
			t.Errorf("%q: err %v, want a refusal naming the annotation and saying it is not a selector", v, err)
		}
		if w := h.fake.Writes() - before; w != 0 {
			t.Errorf("%q: %d writes, want 0 (%v)", v, w, h.fake.Operations())
		}
	}
	if d := h.fake.Operations()["elb:DeregisterInstancesFromLoadBalancer"]; d != 0 {
		t.Errorf("%d deregistrations, want 0", d)
	}
	if e, _ = h.fake.ClassicLB(c.lb.name(svc)); len(e.Instances) != 2 {
		t.Errorf("instances %v, want the two kept", e.Instances)
	}
}

// Through the SDK at the fake, on an NLB: targets registered, then target-node-labels written
// as a selector (role!=spot): the sync fails naming the annotation, no target is deregistered.
func TestTargetNodeLabelsSelectorFormKeepsNLBTargets(t *testing.T) {
	h := newHarness(t, "tnlnlb")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	var nodes []*v1.Node
	for _, n := range []string{"tnn-a", "tnn-b"} {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"role": "web"}}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tnlnlb", UID: "u-tnlnlb", Annotations: map[string]string{
		annotationPrefix + "type": "nlb",
	}}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	targets := func() int {
		_, _, tgs, ok := h.fake.NLBByName(c.lb.name(svc))
		if !ok || len(tgs) != 1 {
			t.Fatalf("NLB %v target groups %d", ok, len(tgs))
		}
		return len(tgs[0].Targets)
	}
	if n := targets(); n != 2 {
		t.Fatalf("%d targets, want 2", n)
	}
	before := h.fake.Writes()
	svc.Annotations[annotationPrefix+"target-node-labels"] = "role!=spot"
	err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), annotationPrefix+"target-node-labels") || !strings.Contains(err.Error(), `"role!=spot"`) {
		t.Errorf("err %v, want a refusal naming the annotation and the item", err)
	}
	if w := h.fake.Writes() - before; w != 0 {
		t.Errorf("%d writes, want 0", w)
	}
	if d := h.fake.Operations()["elbv2:DeregisterTargets"]; d != 0 {
		t.Errorf("%d DeregisterTargets, want 0", d)
	}
	if n := targets(); n != 2 {
		t.Errorf("%d targets, want the 2 kept", n)
	}
}

// Items written for a label selector are refused (naming the item); upstream's own forms are not.
func TestParseNodeLabelsRefusesSelectorForms(t *testing.T) {
	for v, refused := range map[string]bool{
		"role!=spot":                     true, // key "role!"
		"role in (web,api)":              true,
		"role notin (spot)":              true,
		"!spot":                          true,
		"role = web":                     true, // key "role " (with a space)
		"role==web":                      true, // would match any value of role
		"zone=a,role!=spot":              true,
		"role=(web)":                     true,
		"k.io/x y=1":                     true, // not a label key
		"":                               false,
		"role":                           false,
		"role=":                          false,
		"role=web,zone":                  false,
		"role=web=x":                     false, // upstream: role=web
		"=v,k":                           false, // no key: skipped, as upstream
		" k1=v1 , k2=v2 ":                false,
		"node-role.kubernetes.io/worker": false,
		"state=notinuse":                 false, // "notin" inside a value is upstream's plain value
		"app=cannotinstall,notin":        false,
	} {
		f, err := parseNodeLabels(v)
		if refused != (err != nil) {
			t.Errorf("%q: err %v, want refused %v", v, err, refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), annotationPrefix+annNodeLabels) {
			t.Errorf("%q: error %v does not name the annotation", v, err)
		}
		if err == nil && !maps.Equal(f, nodeLabelFilter(upstreamKeyValues(v))) {
			t.Errorf("%q: %v, want upstream's reading %v", v, f, upstreamKeyValues(v))
		}
	}
}
