package realstack_test

import (
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/providers/openstack"
)

// foreignHop is an address on k8s-subnet that no server has: the operator's route goes
// through it (Neutron wants a next hop on one of the router's subnets, not a port).
const foreignHop = "10.0.0.250"

// routerOnce clears k8s-router of routes and ccm's records left by an earlier run.
var routerOnce sync.Once

func (h *harness) router(t cloudtest.T) string {
	id := rs.ids["K8S_ROUTER_ID"]
	if id == "" {
		t.Fatalf("ids.env has no K8S_ROUTER_ID")
	}
	routerOnce.Do(func() {
		none := []routers.Route{}
		if _, err := routers.Update(ctx, rs.network, id, routers.UpdateOpts{Routes: &none}).Extract(); err != nil {
			t.Fatalf("clearing the routes of k8s-router: %v", err)
		}
		tags, err := attributestags.List(ctx, rs.network, "routers", id).Extract()
		if err != nil {
			t.Fatalf("listing the tags of k8s-router: %v", err)
		}
		for _, tag := range tags {
			if strings.HasPrefix(tag, "ccm-route.") {
				_ = attributestags.Delete(ctx, rs.network, "routers", id, tag).ExtractErr()
			}
		}
	})
	return id
}

// RouteCloud is a cloud of cluster whose routes are on k8s-router.
func (h *harness) RouteCloud(t cloudtest.T, cluster string, cidrs []netip.Prefix) cloudprovider.Interface {
	c, err := openstack.New(strings.NewReader(rs.cloudConf(h.rec, h.extra+"\n[Route]\nrouter-id = "+h.router(t)+"\n")))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.UseClusterName(cluster)
	c.UseClusterCIDRs(cidrs)
	c.Initialize(h.events, h.stop)
	return c
}

func (h *harness) SharedDestinations() bool { return true }

func (h *harness) AddForeignRoute(t cloudtest.T, dest string) {
	r := h.routes(t)
	next := append(r, routers.Route{DestinationCIDR: dest, NextHop: foreignHop})
	if _, err := routers.Update(ctx, rs.network, h.router(t), routers.UpdateOpts{Routes: &next}).Extract(); err != nil {
		t.Fatalf("adding the operator's route: %v", err)
	}
}

func (h *harness) routes(t cloudtest.T) []routers.Route {
	r, err := routers.Get(ctx, rs.network, h.router(t)).Extract()
	if err != nil {
		t.Fatalf("getting k8s-router: %v", err)
	}
	return r.Routes
}

func (h *harness) HeldRoutes(t cloudtest.T) []string {
	h.mu.Lock()
	names := map[string]string{foreignHop: "foreign"}
	for ip, name := range h.names {
		names[ip] = name
	}
	h.mu.Unlock()
	var out []string
	for _, r := range h.routes(t) {
		via := names[r.NextHop]
		if via == "" {
			via = r.NextHop
		}
		out = append(out, r.DestinationCIDR+" via "+via)
	}
	sort.Strings(out)
	return out
}

func (h *harness) DeleteRouteByHand(t cloudtest.T, dest, node string) {
	ip := h.ipOf(node)
	next := slices.DeleteFunc(h.routes(t), func(r routers.Route) bool { return r.DestinationCIDR == dest && r.NextHop == ip })
	if _, err := routers.Update(ctx, rs.network, h.router(t), routers.UpdateOpts{Routes: &next}).Extract(); err != nil {
		t.Fatalf("deleting a route by hand: %v", err)
	}
}

var _ cloudtest.RouteHarness = (*harness)(nil)
