package aws

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/svcevents"
)

// Subnets and security groups of a classic ELB change in place (its DNS name stays, no
// delete); only a scheme change recreates it, with a Recreated Event and no drift Event.
func TestClassicELBChangesInPlace(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "inplace")
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	_, md := h.machine("ip-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "ip-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("uid-web"), Annotations: map[string]string{}},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	st, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer = *st
	name := c.lb.name(svc)
	first, _ := h.fake.ClassicLB(name)
	if len(first.Subnets) < 2 {
		t.Fatalf("subnets %v: want one per zone", first.Subnets)
	}
	ops := func() map[string]int { return h.fake.Operations() }

	// One subnet by annotation: attach/detach, nothing recreated.
	svc.Annotations[annotationPrefix+annSubnets] = first.Subnets[0]
	o0 := ops()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	o1 := ops()
	got, _ := h.fake.ClassicLB(name)
	if got.DNSName != first.DNSName || !slices.Equal(got.Subnets, first.Subnets[:1]) || o1["elb:DeleteLoadBalancer"] != o0["elb:DeleteLoadBalancer"] ||
		o1["elb:DetachLoadBalancerFromSubnets"] != o0["elb:DetachLoadBalancerFromSubnets"]+1 {
		t.Errorf("subnet change: DNS %s (was %s), subnets %v, operations %v", got.DNSName, first.DNSName, got.Subnets, o1)
	}

	// The operator's ELB group instead of its own: applied in place.
	shared := h.fake.AddSecurityGroup("shared-elb", "", nil)
	cfgLB, _ := h.cloud(t, "[Global]\nElbSecurityGroup = "+shared+"\n").LoadBalancer()
	if _, err := cfgLB.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	o2 := ops()
	got, _ = h.fake.ClassicLB(name)
	if got.DNSName != first.DNSName || !slices.Equal(got.SecurityGroups, []string{shared}) || o2["elb:ApplySecurityGroupsToLoadBalancer"] != o1["elb:ApplySecurityGroupsToLoadBalancer"]+1 ||
		o2["elb:DeleteLoadBalancer"] != o0["elb:DeleteLoadBalancer"] {
		t.Errorf("group change: DNS %s, groups %v, operations %v", got.DNSName, got.SecurityGroups, o2)
	}
	if g, left := h.fake.GroupByName("k8s-elb-" + name); left {
		t.Errorf("the ELB's own group %s is still there after the ELB moved to %s", g, shared)
	}
	w := h.fake.Writes()
	if _, err := cfgLB.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("the sync after the group change made %d writes, want 0", d)
	}

	// internal (back in a ccm without ElbSecurityGroup): ELB cannot change the scheme, so the
	// ELB is recreated, with an Event.
	svc.Annotations[annotationPrefix+annInternal] = "true"
	delete(svc.Annotations, annotationPrefix+annSubnets)
	lb, _ = h.cloud(t, "").LoadBalancer()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	got, _ = h.fake.ClassicLB(name)
	if got.Scheme != "internal" || got.DNSName == first.DNSName {
		t.Errorf("scheme change: scheme %s, DNS %s (was %s)", got.Scheme, got.DNSName, first.DNSName)
	}
	if found, evs := h.events.Await(svc, 5*time.Second, v1.EventTypeNormal, svcevents.ReasonRecreated, "scheme"); !found {
		t.Errorf("no Recreated Event; Events: %q", evs)
	}
	for _, ev := range h.events.On(svc) {
		if strings.Contains(ev, " "+svcevents.ReasonDriftRepaired+":") {
			t.Errorf("a change of the Service was reported as drift: %s", ev)
		}
	}
}
