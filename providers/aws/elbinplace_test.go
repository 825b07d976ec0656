package aws

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/common/svcevents"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
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
	svc.Annotations[annotations.Prefix+annotations.Subnets] = first.Subnets[0]
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
	svc.Annotations[annotations.Prefix+annotations.Internal] = "true"
	delete(svc.Annotations, annotations.Prefix+annotations.Subnets)
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

// A sync that changes an ELB checks its ownership on tags read then, not on the copy the shared
// listing made: a load balancer whose tags were changed since is not written to.
func TestELBOwnershipReadBeforeAWrite(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, "fresh")
	_, md := h.machine("fr-a")
	_, md2 := h.machine("fr-b")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "fr-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}},
		{ObjectMeta: metav1.ObjectMeta{Name: "fr-b"}, Spec: v1.NodeSpec{ProviderID: md2.ProviderID}}}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID("uid-web")},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	first, _ := h.cloud(t, "").LoadBalancer()
	st, err := first.EnsureLoadBalancer(ctx, "x", svc, nodes)
	if err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer = *st
	lb, _ := h.cloud(t, "").LoadBalancer() // a restart: its first sync lists the cluster's ELBs
	w := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil || h.fake.Writes() != w {
		t.Fatalf("the unchanged sync after the restart: %v, %d writes", err, h.fake.Writes()-w)
	}
	name := lbName("fresh", svc)
	op := h.operator()
	if _, err := op.elb.AddTags(ctx, &elb.AddTagsInput{LoadBalancerNames: []string{name},
		Tags: []elbtypes.Tag{{Key: aws.String(ownership.ServiceUIDTag), Value: aws.String("uid-someone-else")}}}); err != nil {
		t.Fatal(err)
	}
	// A change the sync reads itself (the attributes are not in the listing): a repair is due.
	if _, err := op.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String(name),
		LoadBalancerAttributes: &elbtypes.LoadBalancerAttributes{CrossZoneLoadBalancing: &elbtypes.CrossZoneLoadBalancing{Enabled: true}}}); err != nil {
		t.Fatal(err)
	}
	w = h.fake.Writes()
	_, err = lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
	if !errors.Is(err, ownership.ErrNotOwned) {
		t.Errorf("a sync of an ELB whose tags name another Service = %v, want a not-owned refusal", err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("%d writes to a load balancer this Service no longer owns", d)
	}
}
