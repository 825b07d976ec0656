package cloudtest

import (
	"slices"

	cloudprovider "k8s.io/cloud-provider"
)

// routesFollowNodes: the route controller's passes make a route per Node, write nothing when
// nothing changed (in the same process or after a restart), follow a Node added and removed,
// and repair a route deleted by hand.
func routesFollowNodes(t T, c Config) {
	h := routeHarness(t, c)
	rc := newRouteCluster(t, h, c.ClusterName)
	rc.addNode(t, "cloudtest-route-a", "10.244.1.0/24")
	rc.addNode(t, "cloudtest-route-b", "10.244.2.0/24")
	a, b, n3 := "10.244.1.0/24 via cloudtest-route-a", "10.244.2.0/24 via cloudtest-route-b", "10.244.3.0/24 via cloudtest-route-c"
	if w := rc.mustReconcile(t, "the first pass"); w == 0 {
		t.Errorf("the first pass made no write")
	}
	if m := heldHas(t, h, a, b); len(m) > 0 {
		t.Fatalf("after the first pass the cloud lacks %v; it holds %v", m, h.HeldRoutes(t))
	}
	listed, err := rc.routes.ListRoutes(ctx, rc.name)
	if err != nil || len(listed) != 2 || !listsNode(listed, "cloudtest-route-a", "10.244.1.0/24") || !listsNode(listed, "cloudtest-route-b", "10.244.2.0/24") {
		t.Errorf("ListRoutes = %v, %v; want the two Nodes' routes, not blackholes", routeNames(listed), err)
	}
	if w := rc.mustReconcile(t, "the second pass"); w != 0 {
		t.Errorf("the second pass with nothing changed made %d writes, want 0", w)
	}
	rc.restart(t)
	if w := rc.mustReconcile(t, "the first pass after a restart"); w != 0 {
		t.Errorf("the first pass after a restart, with nothing changed, made %d writes, want 0", w)
	}
	rc.addNode(t, "cloudtest-route-c", "10.244.3.0/24")
	rc.mustReconcile(t, "the pass after a Node was added")
	if m := heldHas(t, h, n3); len(m) > 0 {
		t.Errorf("after a Node was added the cloud lacks %v; it holds %v", m, h.HeldRoutes(t))
	}
	rc.deleteNode(t, "cloudtest-route-a")
	rc.mustReconcile(t, "the pass after a Node was deleted")
	if slices.Contains(h.HeldRoutes(t), a) {
		t.Errorf("the route of a deleted Node is still held: %v", h.HeldRoutes(t))
	}
	h.DeleteRouteByHand(t, "10.244.2.0/24", "cloudtest-route-b")
	if w := rc.mustReconcile(t, "the pass after a route was deleted by hand"); w == 0 {
		t.Errorf("the pass after a route was deleted by hand made no write")
	}
	if m := heldHas(t, h, b, n3); len(m) > 0 {
		t.Errorf("after the repair the cloud lacks %v; it holds %v", m, h.HeldRoutes(t))
	}
	if w := rc.mustReconcile(t, "the pass after the repair"); w != 0 {
		t.Errorf("the pass after the repair made %d writes, want 0", w)
	}
}

// routesOfOthersUntouched: two clusters share where routes live (with overlapping Pod CIDRs
// where the cloud allows it), beside an operator's route in the cluster CIDR. Each lists only
// its own, and a cluster whose Nodes all go removes only its own; asked directly to delete
// another's route or to route outside its cluster CIDR, a cloud writes nothing.
func routesOfOthersUntouched(t T, c Config) {
	h := routeHarness(t, c)
	victim := newRouteCluster(t, h, c.ClusterName)
	other := newRouteCluster(t, h, c.ClusterName+"-other")
	victim.addNode(t, "cloudtest-victim-a", "10.244.1.0/24")
	victim.addNode(t, "cloudtest-victim-b", "10.244.2.0/24")
	h.AddForeignRoute(t, "10.244.9.0/24")
	victim.mustReconcile(t, "the victim's first pass")
	cidr := "10.244.3.0/24"
	if h.SharedDestinations() {
		cidr = "10.244.1.0/24"
	}
	other.addNode(t, "cloudtest-other-a", cidr)
	other.mustReconcile(t, "the other cluster's first pass")
	va, vb, foreign, oa := "10.244.1.0/24 via cloudtest-victim-a", "10.244.2.0/24 via cloudtest-victim-b", "10.244.9.0/24 via foreign", cidr+" via cloudtest-other-a"
	if m := heldHas(t, h, va, vb, foreign, oa); len(m) > 0 {
		t.Fatalf("the cloud lacks %v; it holds %v", m, h.HeldRoutes(t))
	}
	for _, rc := range []*routeCluster{victim, other} {
		listed, err := rc.routes.ListRoutes(ctx, rc.name)
		if err != nil {
			t.Fatalf("%s: ListRoutes: %v", rc.name, err)
		}
		for _, r := range listed {
			if rc.nodes[string(r.TargetNode)] == nil || r.Blackhole {
				t.Errorf("%s lists %s (target %q, blackhole %v): not one of its own routes", rc.name, r.Name, r.TargetNode, r.Blackhole)
			}
		}
	}
	victim.deleteNode(t, "cloudtest-victim-a")
	victim.deleteNode(t, "cloudtest-victim-b")
	victim.mustReconcile(t, "the victim's pass after its Nodes were deleted")
	held := h.HeldRoutes(t)
	if slices.Contains(held, va) || slices.Contains(held, vb) {
		t.Errorf("the victim's routes outlived its Nodes: %v", held)
	}
	if m := heldHas(t, h, foreign, oa); len(m) > 0 {
		t.Fatalf("the victim's pass removed %v, which were not its own; the cloud holds %v", m, held)
	}
	victim.addNode(t, "cloudtest-victim-c", "10.244.4.0/24")
	victim.settle(t)
	theirs, err := other.routes.ListRoutes(ctx, other.name)
	if err != nil {
		t.Fatalf("ListRoutes: %v", err)
	}
	before := h.Writes()
	for _, r := range append(theirs, &cloudprovider.Route{Name: "10.244.9.0/24", DestinationCIDR: "10.244.9.0/24", Blackhole: true}) {
		_ = victim.routes.DeleteRoute(ctx, victim.name, r)
	}
	err = victim.routes.CreateRoute(ctx, victim.name, "hint", &cloudprovider.Route{TargetNode: "cloudtest-victim-c", DestinationCIDR: "10.99.0.0/16"})
	if err == nil {
		t.Errorf("CreateRoute outside the cluster CIDR succeeded")
	}
	if w := h.Writes() - before; w != 0 {
		t.Errorf("asked to delete another owner's routes and to route outside the cluster CIDR, the victim's cloud made %d writes, want 0", w)
	}
	if m := heldHas(t, h, foreign, oa); len(m) > 0 {
		t.Errorf("the victim's cloud removed %v when asked directly; the cloud holds %v", m, h.HeldRoutes(t))
	}
}

func listsNode(listed []*cloudprovider.Route, node, cidr string) bool {
	return slices.ContainsFunc(listed, func(r *cloudprovider.Route) bool {
		return string(r.TargetNode) == node && r.DestinationCIDR == cidr && !r.Blackhole
	})
}

func routeNames(rs []*cloudprovider.Route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name+" -> "+string(r.TargetNode))
	}
	return out
}
