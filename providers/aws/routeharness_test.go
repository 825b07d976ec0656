package aws

import (
	"net/netip"
	"sort"
	"strings"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// sharedRouteTable is where every RouteCloud of a harness routes: the fake's main table, named
// by RouteTableID as a table several clusters share is. That it carries the harness's cluster
// tag must make no route that cluster's: a table named by ID is never taken as the cluster's own.
const sharedRouteTable = fakeaws.MainRouteTable

var _ cloudtest.RouteHarness = (*harness)(nil)

// RouteCloud is a cloud of cluster on the shared table, handed the cluster CIDRs as ccm does.
func (h *harness) RouteCloud(t cloudtest.T, cluster string, cidrs []netip.Prefix) cloudprovider.Interface {
	return h.routeCloud(t, h.configFor(cluster)+"[Global]\nRouteTableID = "+sharedRouteTable+"\n", cidrs)
}

// routeCloud is a cloud of config cfg, started as ccm starts it: the cluster CIDRs before
// Initialize.
func (h *harness) routeCloud(t cloudtest.T, cfg string, cidrs []netip.Prefix) *Cloud {
	c, err := New(strings.NewReader(cfg))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.useRetry(testRetry)
	c.UseClusterCIDRs(cidrs)
	c.Initialize(h.events, nil)
	return c
}

// SharedDestinations is false: an EC2 route table holds one route per destination.
func (h *harness) SharedDestinations() bool { return false }

// AddForeignRoute routes destination through an instance of no cluster and no Node (no
// cluster tag), outside the API, as an operator would.
func (h *harness) AddForeignRoute(t cloudtest.T, destination string) {
	id := h.fake.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1a", PrivateDNS: "foreign-router.internal"})
	h.mu.Lock()
	if h.foreign == nil {
		h.foreign = map[string]bool{}
	}
	h.foreign[id] = true
	h.mu.Unlock()
	if err := h.fake.AddRoute(sharedRouteTable, destination, id, ""); err != nil {
		t.Fatalf("AddForeignRoute: %v", err)
	}
}

// HeldRoutes lists the shared table's routes to instances, each through the name AddInstance
// was given for its instance ("foreign" for AddForeignRoute's).
func (h *harness) HeldRoutes(t cloudtest.T) []string {
	tbl, ok := h.fake.RouteTable(sharedRouteTable)
	if !ok {
		t.Fatalf("the fake has no route table %s", sharedRouteTable)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range tbl.Routes {
		if r.Instance != "" {
			out = append(out, r.CIDR+" via "+h.instanceName(r.Instance))
		}
	}
	sort.Strings(out)
	return out
}

// instanceName is the name AddInstance was given for instance id; callers hold h.mu.
func (h *harness) instanceName(id string) string {
	if h.foreign[id] {
		return "foreign"
	}
	for name, got := range h.ids {
		if got == id {
			return name
		}
	}
	return id
}

// DeleteRouteByHand removes the route to destination through node's instance, outside the API.
func (h *harness) DeleteRouteByHand(t cloudtest.T, destination, node string) {
	h.mu.Lock()
	id := h.ids[node]
	h.mu.Unlock()
	tbl, _ := h.fake.RouteTable(sharedRouteTable)
	for _, r := range tbl.Routes {
		if r.CIDR == destination && r.Instance == id && id != "" {
			h.fake.RemoveRoute(sharedRouteTable, destination)
			return
		}
	}
	t.Fatalf("DeleteRouteByHand: no route to %s through %s's instance %q in %v", destination, node, id, tbl.Routes)
}
