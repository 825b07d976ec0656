package aws

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// A creation interrupted after any step (the next one denied: an answer the SDK does not retry), then the Service deleted by a new process (as after a
// SIGKILL): everything the Service owns is gone (load balancer, target groups, its security
// group, node rules), found by the ownership tags whatever the step, even when the Service's
// ports changed in between.
func TestDeleteAfterInterruptedCreation(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		lbType    string
		failAt    string // the operation the creation fails at: every step before it was made
		portAfter int32  // the Service's nodePort when deleted (0: unchanged)
	}{
		{"classic", "AuthorizeSecurityGroupIngress", 0}, // the group made, no rule, no ELB
		{"classic", "CreateLoadBalancer", 0},            // group and rules, no ELB
		{"classic", "CreateLoadBalancer", 31000},        // ... and the ports changed since
		{"classic", "ConfigureHealthCheck", 0},
		{"classic", "RegisterInstancesWithLoadBalancer", 0},
		{"classic", "AddTags", 0},
		{"nlb", "CreateTargetGroup", 0},
		{"nlb", "CreateListener", 0},     // a target group made, not attached
		{"nlb", "CreateListener", 31000}, // ... for a port the Service no longer has
		{"nlb", "AuthorizeSecurityGroupIngress", 0},
		{"nlb", "RegisterTargets", 0},
		{"nlb", "AddTags", 0},
	} {
		name := tc.lbType + " fails at " + tc.failAt
		if tc.portAfter != 0 {
			name += ", ports changed"
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, "interrupt")
			var nodes []*v1.Node
			for _, n := range []string{"n-a", "n-b"} {
				_, md := h.machine(n)
				nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
			}
			svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("uid-web")},
				Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
			if tc.lbType == "nlb" {
				svc.Annotations = map[string]string{annotations.Prefix + annotations.Type: "nlb"}
			}
			before := h.fake.Dump()
			h.fake.SetFaults(fakeaws.Faults{DenyOps: map[string]bool{tc.failAt: true}})
			lb, _ := h.cloud(t, "").LoadBalancer()
			if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err == nil {
				t.Fatalf("EnsureLoadBalancer with %s failing succeeded", tc.failAt)
			}
			h.fake.SetFaults(fakeaws.Faults{})
			if h.fake.Dump() == before {
				t.Fatalf("the interrupted creation made nothing: the case tests nothing")
			}
			if tc.portAfter != 0 {
				svc.Spec.Ports[0].NodePort = tc.portAfter
			}
			restarted, _ := h.cloud(t, "").LoadBalancer()
			// As the library does: it deletes only what GetLoadBalancer says exists.
			if _, exists, err := restarted.GetLoadBalancer(ctx, "x", svc); err != nil || !exists {
				t.Fatalf("GetLoadBalancer after the interrupted creation = (%v, %v), want (true, nil): the library would not delete what was made", exists, err)
			}
			if err := restarted.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
				t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
			}
			if _, exists, err := restarted.GetLoadBalancer(ctx, "x", svc); err != nil || exists {
				t.Errorf("GetLoadBalancer after the delete = (%v, %v), want (false, nil)", exists, err)
			}
			res, err := h.fake.Control().Resources()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				if r.Service == "ns/web" {
					t.Errorf("left behind: %s %s", r.Kind, r.Name)
				}
			}
			id := ownership.Identity{Cluster: "interrupt", Namespace: "ns", Name: "web", UID: "uid-web"}
			g, _ := h.fake.Group(fakeaws.NodeGroup)
			for _, r := range g.Rules {
				if ownership.DescribedBy(id, r.Description) {
					t.Errorf("node rule left behind: %s", r)
				}
			}
			if after := h.fake.Dump(); after != before {
				t.Errorf("the cloud differs from before the creation:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// A delete interrupted between the load balancer and its security group: the next delete, in
// a new process, finds the group by its tags and removes it.
func TestDeleteInterruptedAfterTheLoadBalancer(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "interrupt")
	_, md := h.machine("n-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("uid-web")},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	before := h.fake.Dump()
	lb, _ := h.cloud(t, "").LoadBalancer()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	h.fake.SetFaults(fakeaws.Faults{DenyOps: map[string]bool{"DeleteSecurityGroup": true}})
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err == nil {
		t.Fatal("EnsureLoadBalancerDeleted with DeleteSecurityGroup failing succeeded")
	}
	h.fake.SetFaults(fakeaws.Faults{})
	if len(h.fake.ClassicLBNames()) != 0 {
		t.Fatalf("the ELB is still there: %v", h.fake.ClassicLBNames())
	}
	restarted, _ := h.cloud(t, "").LoadBalancer()
	if err := restarted.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if after := h.fake.Dump(); after != before {
		t.Errorf("left behind:\n%s", strings.TrimPrefix(after, before))
	}
}
