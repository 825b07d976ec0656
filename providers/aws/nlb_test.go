package aws

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider/api"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

func lbService(name string, ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{
			{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
			{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}}}}
}

// The NLB path: provisioning releases the worker with a RetryError, then the status is the
// DNS name; a restart writes nothing; a node change is one write per target group; ELB→NLB
// and back, then delete, leave the cloud as it was.
func TestNLBLifecycleAndTypeChange(t *testing.T) {
	h := newHarness(t, "nlb")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	var nodes []*v1.Node
	for _, n := range []string{"nlb-a", "nlb-b", "nlb-c"} {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	before := h.fake.Inventory()

	// Start as a classic ELB (TCP only), then switch to NLB.
	classic := lbService("web", nil)
	classic.Spec.Ports = classic.Spec.Ports[:1]
	if _, err := lb.EnsureLoadBalancer(ctx, "x", classic, nodes[:2]); err != nil {
		t.Fatalf("classic: %v", err)
	}
	svc := lbService("web", map[string]string{annotationPrefix + "type": "nlb"})
	h.fake.SetNLBProvisioning(300 * time.Millisecond)
	_, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes[:2])
	var retry *api.RetryError
	if !errors.As(err, &retry) {
		t.Fatalf("while provisioning: error %v, want a RetryError", err)
	}
	if len(h.fake.ClassicLBNames()) != 0 {
		t.Errorf("the classic ELB survived the type change: %v", h.fake.ClassicLBNames())
	}
	time.Sleep(350 * time.Millisecond)
	st, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes[:2])
	if err != nil {
		t.Fatalf("active: %v", err)
	}
	nlb, listeners, tgs, ok := h.fake.NLBByName(c.lb.name(svc))
	if !ok || st.Ingress[0].Hostname == "" || len(listeners) != 2 || len(tgs) != 2 {
		t.Fatalf("NLB %v listeners %v target groups %v, status %v", nlb, listeners, tgs, st)
	}
	for _, tg := range tgs {
		if len(tg.Targets) != 2 {
			t.Errorf("target group %s targets %v, want 2", tg.Name, tg.Targets)
		}
	}

	g, _ := h.fake.Group(fakeaws.NodeGroup)
	for _, r := range []fakeaws.Rule{{Protocol: "tcp", From: 30080, To: 30080, CIDR: "0.0.0.0/0"}, {Protocol: "udp", From: 30053, To: 30053, CIDR: "0.0.0.0/0"}} {
		if !slices.Contains(g.Rules, r) {
			t.Errorf("node group rules %v lack %v", g.Rules, r)
		}
	}

	// A restart with nothing changed writes nothing.
	w := h.fake.Writes()
	lb2, _ := h.cloud(t, "").LoadBalancer()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes[:2]); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("restart made %d writes", d)
	}
	// One node more: one RegisterTargets per target group.
	w = h.fake.Writes()
	if err := lb2.UpdateLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 2 {
		t.Errorf("node added: %d writes, want 2 (one per target group)", d)
	}

	// Back to classic (TCP only), then delete: nothing left.
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", classic, nodes); err != nil {
		t.Fatalf("back to classic: %v", err)
	}
	if _, _, _, ok := h.fake.NLBByName(c.lb.name(svc)); ok {
		t.Error("the NLB survived the change back to classic")
	}
	if err := lb2.EnsureLoadBalancerDeleted(ctx, "x", classic); err != nil {
		t.Fatal(err)
	}
	if after := h.fake.Inventory(); !slices.Equal(after, before) {
		t.Errorf("leftovers:\nbefore %v\nafter  %v", before, after)
	}
}

// An NLB whose delete was interrupted after the load balancer went leaves target groups that
// the next delete finds by name.
func TestNLBDeleteFindsLeftoverTargetGroups(t *testing.T) {
	h := newHarness(t, "nlbleft")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	_, md := h.machine("left-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "left-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	before := h.fake.Inventory()
	svc := lbService("left", map[string]string{annotationPrefix + "type": "nlb"})
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash of deleteNLB after its first steps (node rules revoked, NLB deleted).
	nlb, _, _, _ := h.fake.NLBByName(c.lb.name(svc))
	if err := c.lb.nodeRulesNLB(ctx, svc, []string{fakeaws.NodeGroup}, []string{"30080", "30053"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.api.elbv2.DeleteLoadBalancer(ctx, deleteNLBInput(nlb.ARN)); err != nil {
		t.Fatal(err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if after := h.fake.Inventory(); !slices.Equal(after, before) {
		t.Errorf("leftovers:\nbefore %v\nafter  %v", before, after)
	}
}

func deleteNLBInput(arn string) *elbv2.DeleteLoadBalancerInput {
	return &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)}
}
