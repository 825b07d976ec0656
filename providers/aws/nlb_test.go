package aws

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

func lbService(name string, ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{
			{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP},
			{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}}}}
}

// The NLB path: provisioning releases the worker with a RetryError, then the status is the
// DNS name; a restart writes nothing; a node change is one write per target group and
// nothing else; ELB→NLB and back, then delete, leave the cloud as it was.
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
	svc := lbService("web", map[string]string{annotations.Prefix + "type": "nlb"})
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
	desc := ruleDescription(c.lb.identity(svc), "client")
	for _, r := range []fakeaws.Rule{{Protocol: "tcp", From: 30080, To: 30080, CIDR: "0.0.0.0/0", Description: desc}, {Protocol: "udp", From: 30053, To: 30053, CIDR: "0.0.0.0/0", Description: desc}} {
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
	// The classic ELB's node rule (from its group) survives the NLB's removal, and the NLB's
	// rules are gone.
	e, _ := h.fake.ClassicLB(c.lb.name(classic))
	g, _ = h.fake.Group(fakeaws.NodeGroup)
	if want := []fakeaws.Rule{{Protocol: "tcp", From: 30080, To: 30080, SourceSG: e.SecurityGroups[0], Description: ruleDescription(c.lb.identity(classic), "elb")}}; !slices.Equal(g.Rules, want) {
		t.Errorf("node group rules after the change back to classic: %v, want %v", g.Rules, want)
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
	svc := lbService("left", map[string]string{annotations.Prefix + "type": "nlb"})
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	// Simulate a crash of deleteNLB after its first steps (node rules revoked, NLB deleted).
	nlb, _, _, _ := h.fake.NLBByName(c.lb.name(svc))
	if err := c.lb.removeNodeRulesNLB(ctx, svc, "", []string{fakeaws.NodeGroup}); err != nil {
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

// A restart with nothing changed writes nothing and reads each target group's targets once,
// besides a listing (one paged DescribeLoadBalancers, one DescribeTags per 20 NLBs, one paged
// DescribeTargetGroups): no per-NLB Describe of the NLB, its groups or listeners. After that
// the running ccm remembers the targets: a resync reads nothing, and a node joining is one
// RegisterTargets per target group with no read. A node that left while the ccm was down is
// found by the next restart.
func TestNLBRestartReadsListingOnly(t *testing.T) {
	h := newHarness(t, "nlbreads")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	var nodes []*v1.Node
	for _, n := range []string{"r-a", "r-b", "r-c"} {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	const n = 25 // more than one DescribeTags batch of 20
	var svcs []*v1.Service
	for i := 0; i < n; i++ {
		svc := lbService(fmt.Sprintf("s%d", i), map[string]string{annotations.Prefix + "type": "nlb"})
		if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes[:2]); err != nil {
			t.Fatal(err)
		}
		svcs = append(svcs, svc)
	}
	reads := func() (int, map[string]int) {
		total, m := 0, map[string]int{}
		for op, k := range h.fake.Operations() {
			if _, action, _ := strings.Cut(op, ":"); strings.HasPrefix(action, "Describe") {
				total += k
				m[op] = k
			}
		}
		return total, m
	}
	var running cloudprovider.LoadBalancer
	// ensure ensures every Service with nodes, in a new ccm process when fresh, and returns
	// the reads made (total and by operation) and the writes.
	ensure := func(fresh bool, nodes []*v1.Node) (int, map[string]int, int) {
		t.Helper()
		r0, before := reads()
		w := h.fake.Writes()
		if fresh {
			running, _ = h.cloud(t, "").LoadBalancer()
		}
		for _, svc := range svcs {
			if _, err := running.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
				t.Fatal(err)
			}
		}
		r1, after := reads()
		for op := range after {
			after[op] -= before[op]
		}
		return r1 - r0, after, h.fake.Writes() - w
	}
	// Every sync compares each NLB with the cloud: its listeners and its attributes (one read
	// each), each target group's targets (one read each; its attributes only with
	// target-group-attributes); the rest comes from listings shared by
	// all NLBs (load balancers, their tags 20 at a time, target groups, security groups).
	listed := func(ops map[string]int) bool {
		return ops["elbv2:DescribeLoadBalancers"] == 1 && ops["elbv2:DescribeTags"] == 2 && ops["elbv2:DescribeTargetGroups"] == 1 && ops["ec2:DescribeSecurityGroups"] == 1
	}
	perNLB := func(ops map[string]int) bool {
		return ops["elbv2:DescribeListeners"] == n && ops["elbv2:DescribeTargetGroupAttributes"] == 0 && ops["elbv2:DescribeLoadBalancerAttributes"] == n && ops["elbv2:DescribeTargetHealth"] == 2*n
	}
	total, ops, writes := ensure(true, nodes[:2])
	if writes != 0 || !listed(ops) || !perNLB(ops) {
		t.Errorf("restart of %d NLBs: %d reads %v, %d writes; want 0 writes, the listings and the per-NLB comparison", n, total, ops, writes)
	}
	t.Logf("restart, nothing changed, %d NLBs (2 target groups each): %d reads %v", n, total, ops)
	if total, ops, writes = ensure(false, nodes[:2]); writes != 0 || !perNLB(ops) || total != 4*n {
		t.Errorf("resync in the running ccm: %d reads %v, %d writes; want 0 writes, only the per-NLB comparison", total, ops, writes)
	}

	// A node joins: every NLB's two target groups get it, one write each (the new instance is
	// looked up once for all Services).
	total, ops, writes = ensure(false, nodes)
	_, _, tgs, _ := h.fake.NLBByName(c.lb.name(svcs[0]))
	if writes != 2*n || ops["ec2:DescribeInstances"] != 1 || !perNLB(ops) || len(tgs) != 2 || len(tgs[0].Targets) != 3 || len(tgs[1].Targets) != 3 {
		t.Errorf("node added: %d writes (want %d), %d reads %v, target groups %v", writes, 2*n, total, ops, tgs)
	}
	// Targets are in no listing: writing them leaves the NLBs and their target groups listed, so
	// the next resync reads only the per-NLB comparison again.
	if total, ops, writes = ensure(false, nodes); writes != 0 || !perNLB(ops) || total != 4*n {
		t.Errorf("resync after the node joined: %d reads %v, %d writes; want 0 writes, only the per-NLB comparison", total, ops, writes)
	}
	// A node leaves while the ccm is down: the restart reads the targets and deregisters it,
	// after reading each NLB's tags again (its ownership was decided on the listing's).
	total, ops, writes = ensure(true, nodes[1:])
	_, _, tgs, _ = h.fake.NLBByName(c.lb.name(svcs[0]))
	checked := maps.Clone(ops)
	checked["elbv2:DescribeTags"] -= n
	if writes != 2*n || !listed(checked) || !perNLB(ops) || len(tgs[0].Targets) != 2 {
		t.Errorf("restart after a node left: %d writes (want %d), %d reads %v, targets %v", writes, 2*n, total, ops, tgs[0].Targets)
	}
	if total, ops, writes = ensure(true, nodes[1:]); writes != 0 || !listed(ops) || !perNLB(ops) {
		t.Errorf("restart after that: %d reads %v, %d writes; want the listings, the per-NLB comparison, 0 writes", total, ops, writes)
	}

	// The listing pages as ELBv2 does.
	var names []string
	in := &elbv2.DescribeLoadBalancersInput{PageSize: aws.Int32(10)}
	for pages := 0; ; pages++ {
		out, err := c.api.elbv2.DescribeLoadBalancers(ctx, in)
		if err != nil || pages > n {
			t.Fatalf("paging: %v after %d pages", err, pages)
		}
		for _, l := range out.LoadBalancers {
			names = append(names, aws.ToString(l.LoadBalancerName))
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	if len(names) != n || len(slices.Compact(slices.Sorted(slices.Values(names)))) != n {
		t.Errorf("paged listing: %d names, want %d distinct", len(names), n)
	}
}

// proxy-protocol "*" on an NLB: proxy_protocol_v2.enabled on every target group; a restart
// writes nothing; removing the annotation turns it off; a bad value changes nothing.
func TestNLBTargetGroupAttributes(t *testing.T) {
	h := newHarness(t, "nlbpp")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	_, md := h.machine("pp-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "pp-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	// proxy-protocol does nothing on an NLB (upstream ignores it there): one Warning says so.
	svc := lbService("pp", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + "proxy-protocol": "*",
		annotations.Prefix + "target-group-attributes": "proxy_protocol_v2.enabled=true, deregistration_delay.timeout_seconds=30,no_such.key=1"})
	svc.UID = "uid-pp"
	attrs := func() []string {
		_, _, tgs, _ := h.fake.NLBByName(c.lb.name(svc))
		var out []string
		for _, tg := range tgs {
			out = append(out, fmt.Sprintf("%v/%s", tg.ProxyProtocolV2, tg.Attributes["deregistration_delay.timeout_seconds"]))
		}
		return out
	}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if got := attrs(); !slices.Equal(got, []string{"true/30", "true/30"}) {
		t.Fatalf("attributes per target group %v, want proxy v2 on and delay 30 on both", got)
	}
	for _, want := range []string{annotations.Prefix + "proxy-protocol is not used for an NLB", "target groups have no attribute no_such.key"} {
		if ok, evs := h.events.Await(svc, 5*time.Second, "Warning UnsupportedAnnotation", want); !ok {
			t.Errorf("events %q lack %q", evs, want)
		}
	}
	w := h.fake.Writes()
	lb2, _ := h.cloud(t, "").LoadBalancer()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("restart with target-group-attributes: %d writes, want 0", d)
	}
	svc.Annotations[annotations.Prefix+"target-group-attributes"] = "proxy_protocol_v2.enabled"
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err == nil || !strings.Contains(err.Error(), annotations.Prefix+"target-group-attributes") {
		t.Errorf("target-group-attributes without a value: %v, want an error naming the annotation", err)
	}
	// A bad value: AWS refuses it, the error names the annotation.
	svc.Annotations[annotations.Prefix+"target-group-attributes"] = "deregistration_delay.timeout_seconds=forever"
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err == nil || !strings.Contains(err.Error(), annotations.Prefix+"target-group-attributes") {
		t.Errorf("bad attribute value: %v, want an error naming the annotation", err)
	}
	// Removed: left as they are, as upstream does (no writes).
	delete(svc.Annotations, annotations.Prefix+"target-group-attributes")
	modify := func() int { return h.fake.Operations()["elbv2:ModifyTargetGroupAttributes"] }
	m := modify()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if got := attrs(); !slices.Equal(got, []string{"true/30", "true/30"}) || modify() != m {
		t.Errorf("annotation removed: attributes %v, ModifyTargetGroupAttributes +%d; want unchanged, none", got, modify()-m)
	}
	// Changed: only the differing key is written, once per target group.
	svc.Annotations[annotations.Prefix+"target-group-attributes"] = "proxy_protocol_v2.enabled=false,deregistration_delay.timeout_seconds=30"
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if got := attrs(); !slices.Equal(got, []string{"false/30", "false/30"}) || modify() != m+2 {
		t.Errorf("changed: attributes %v, ModifyTargetGroupAttributes +%d; want proxy off, +2", got, modify()-m)
	}
}

// A deleted NLB is not answered from the listing: deleting and recreating the Service within
// the listing's lifetime makes a new NLB.
func TestNLBListingForgetsDeleted(t *testing.T) {
	h := newHarness(t, "nlbforget")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	_, md := h.machine("f-a")
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "f-a"}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}}}
	svc := lbService("f", map[string]string{annotations.Prefix + "type": "nlb"})
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	lb2, _ := h.cloud(t, "").LoadBalancer()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil { // fills lb2's listing
		t.Fatal(err)
	}
	if err := lb2.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if _, _, tgs, ok := h.fake.NLBByName(c.lb.name(svc)); !ok || len(tgs) != 2 {
		t.Errorf("after delete and ensure: NLB exists %v, target groups %d; want a new NLB", ok, len(tgs))
	}
}
