package aws

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

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
		annotations.Prefix + "target-node-labels": "role=",
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
		svc.Annotations[annotations.Prefix+"target-node-labels"] = v
		err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes)
		if err == nil || !strings.Contains(err.Error(), annotations.Prefix+"target-node-labels") || !strings.Contains(err.Error(), "not as a label selector") {
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
		annotations.Prefix + "type": "nlb",
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
	svc.Annotations[annotations.Prefix+"target-node-labels"] = "role!=spot"
	err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes)
	if err == nil || !strings.Contains(err.Error(), annotations.Prefix+"target-node-labels") || !strings.Contains(err.Error(), `"role!=spot"`) {
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
