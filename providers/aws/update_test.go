package aws

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// The node sync calls UpdateLoadBalancer for the Services it has cached, also just after a
// worker deleted one's load balancer: an update must never create one (upstream's does not
// either), or the deleted Service's load balancer and groups would come back and stay.
func TestUpdateNeverCreates(t *testing.T) {
	for _, typ := range []string{"classic", "nlb"} {
		t.Run(typ, func(t *testing.T) {
			h := newHarness(t, "upd"+typ)
			ctx := context.Background()
			c := h.cloud(t, "")
			lb, _ := c.LoadBalancer()
			_, md := h.machine("u-a")
			nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "u-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
			ann := map[string]string{}
			if typ == "nlb" {
				ann[annotations.Prefix+"type"] = "nlb"
			}
			empty := h.fake.Inventory()

			// Never created (its creation still pending): no error, nothing made.
			svc := lbService("web", ann)
			svc.Spec.Ports = svc.Spec.Ports[:1] // TCP only, for the classic ELB
			if err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes); err != nil {
				t.Errorf("update before any create: %v; want none (the pending create uses the current Nodes)", err)
			}
			if got := h.fake.Inventory(); !slices.Equal(got, empty) {
				t.Fatalf("an update created %v", got)
			}

			// Created, then deleted: an update of the cached Service (which has an address)
			// is an error, and creates nothing.
			if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil && typ == "classic" {
				t.Fatal(err)
			}
			svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{Hostname: "old.elb.example"}}
			if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
				t.Fatal(err)
			}
			if err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes); err == nil {
				t.Error("update of a Service whose load balancer is gone: no error")
			}
			if got := h.fake.Inventory(); !slices.Equal(got, empty) {
				t.Errorf("after delete and update the cloud holds %v, want %v", got, empty)
			}
		})
	}
}
