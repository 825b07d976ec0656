package aws

import (
	"context"
	"testing"

	k8stypes "k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

func TestRoutes(t *testing.T) {
	h := newHarness(t, "routes")
	ctx := context.Background()
	c := h.cloud(t, "[Global]\nInstanceCacheTTL = 0s\n")
	rs, ok := c.Routes()
	if !ok {
		t.Fatal("Routes() not implemented")
	}
	idA, _ := h.machine("route-a")
	idB, _ := h.machine("route-b")

	for _, r := range []*cloudprovider.Route{{TargetNode: "route-a", DestinationCIDR: "100.64.1.0/24"}, {TargetNode: "route-b", DestinationCIDR: "100.64.2.0/24"}} {
		if err := rs.CreateRoute(ctx, "routes", "hint", r); err != nil {
			t.Fatalf("CreateRoute %v: %v", r, err)
		}
	}
	if h.fake.SourceDestCheck(idA) || h.fake.SourceDestCheck(idB) {
		t.Error("source/destination check still on")
	}
	w := h.fake.Writes()
	if err := rs.CreateRoute(ctx, "routes", "hint", &cloudprovider.Route{TargetNode: "route-a", DestinationCIDR: "100.64.1.0/24"}); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("re-creating an existing route made %d writes", d)
	}
	list, err := rs.ListRoutes(ctx, "routes")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]k8stypes.NodeName{}
	for _, r := range list {
		got[r.DestinationCIDR] = r.TargetNode
	}
	if len(list) != 2 || got["100.64.1.0/24"] != "route-a" || got["100.64.2.0/24"] != "route-b" {
		t.Errorf("ListRoutes = %v (gateway routes must not be listed)", got)
	}

	// b's instance terminates: its route is a blackhole, and a new node takes the CIDR over.
	h.fake.SetInstanceState(idB, "terminated")
	list, _ = rs.ListRoutes(ctx, "routes")
	for _, r := range list {
		if r.DestinationCIDR == "100.64.2.0/24" && !r.Blackhole {
			t.Errorf("route to a terminated instance not a blackhole: %+v", r)
		}
	}
	idC, _ := h.machine("route-c")
	if err := rs.CreateRoute(ctx, "routes", "hint", &cloudprovider.Route{TargetNode: "route-c", DestinationCIDR: "100.64.2.0/24"}); err != nil {
		t.Fatalf("replacing a blackhole: %v", err)
	}
	if err := rs.DeleteRoute(ctx, "routes", &cloudprovider.Route{DestinationCIDR: "100.64.1.0/24"}); err != nil {
		t.Fatal(err)
	}
	if err := rs.DeleteRoute(ctx, "routes", &cloudprovider.Route{DestinationCIDR: "100.64.1.0/24"}); err != nil {
		t.Errorf("deleting a missing route: %v", err)
	}
	tbl, _ := h.fake.RouteTable(fakeaws.MainRouteTable)
	want := []fakeaws.Route{{CIDR: "10.0.0.0/16", Gateway: "local"}, {CIDR: "100.64.2.0/24", Instance: idC}}
	if len(tbl.Routes) != 2 || tbl.Routes[0] != want[0] || tbl.Routes[1] != want[1] {
		t.Errorf("route table %v, want %v", tbl.Routes, want)
	}

	// Without a tagged table (and no RouteTableID) routes fail with a clear error.
	other := newHarness(t, "untagged")
	oc := other.cloud(t, "[Global]\nKubernetesClusterID = nosuch\n")
	ors, _ := oc.Routes()
	if _, err := ors.ListRoutes(ctx, "x"); err == nil {
		t.Error("ListRoutes without a route table succeeded")
	}
}
