package cloudtest

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/routes"
)

// foreignHop is the address of the operator's routes: no machine of the test has it.
const foreignHop = "192.0.2.1"

// fakeRouteCloud is the reference fake with routes on one shared router (sim.routes), each
// recorded as its cluster's in sim.records: the way common/routes means providers to work.
type fakeRouteCloud struct {
	*fakeCloud
	cluster string
	cidrs   []netip.Prefix
	nodes   corelisters.NodeLister
}

func (h *fakeHarness) RouteCloud(t T, cluster string, cidrs []netip.Prefix) cloudprovider.Interface {
	return &fakeRouteCloud{fakeCloud: h.NewCloud(t).(*fakeCloud), cluster: cluster, cidrs: cidrs}
}

func (h *fakeHarness) SharedDestinations() bool { return true }

func (h *fakeHarness) AddForeignRoute(_ T, dest string) {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	h.sim.routes = append(h.sim.routes, routes.Route{Destination: netip.MustParsePrefix(dest), Hop: foreignHop})
}

func (h *fakeHarness) HeldRoutes(T) []string {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	var out []string
	for _, r := range h.sim.routes {
		out = append(out, r.Destination.String()+" via "+h.machineAt(r.Hop))
	}
	sort.Strings(out)
	return out
}

// machineAt names the machine at address hop. Callers hold sim.mu.
func (h *fakeHarness) machineAt(hop string) string {
	for name, md := range h.sim.machines {
		if md.NodeAddresses[0].Address == hop {
			return name
		}
	}
	if hop == foreignHop {
		return "foreign"
	}
	return hop
}

func (h *fakeHarness) DeleteRouteByHand(_ T, dest, node string) {
	h.sim.mu.Lock()
	defer h.sim.mu.Unlock()
	h.sim.routes = slices.DeleteFunc(h.sim.routes, func(r routes.Route) bool {
		return r.Destination.String() == dest && h.machineAt(r.Hop) == node
	})
}

func (c *fakeRouteCloud) Routes() (cloudprovider.Routes, bool) { return c, true }

func (c *fakeRouteCloud) SetInformers(f informers.SharedInformerFactory) {
	c.nodes = f.Core().V1().Nodes().Lister()
}

// scope and the record check; callers hold sim.mu.
func (c *fakeRouteCloud) scope() routes.Scope {
	nodes, _ := c.nodes.List(labels.Everything())
	return routes.Scope{ClusterCIDRs: c.cidrs, Nodes: routes.NodeHops(nodes)}
}

func (c *fakeRouteCloud) recorded(r routes.Route) bool {
	return c.h.brk != routesByHopOnly && c.h.sim.records[c.cluster+"|"+r.String()]
}

func (c *fakeRouteCloud) ListRoutes(context.Context, string) ([]*cloudprovider.Route, error) {
	s := c.h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	scope := c.scope()
	if c.h.brk == routesListAll {
		scope.ClusterCIDRs = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}
		return scope.List(s.routes, func(routes.Route) bool { return true }), nil
	}
	listed := scope.List(s.routes, c.recorded)
	if c.h.brk == routesAlwaysWrite {
		for _, r := range listed {
			hop, _ := routes.ParseName(r.Name)
			r.TargetNode = types.NodeName(hop.Hop)
		}
	}
	return listed, nil
}

func (c *fakeRouteCloud) CreateRoute(_ context.Context, _ string, _ string, route *cloudprovider.Route) error {
	s := c.h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	node, err := c.nodes.Get(string(route.TargetNode))
	if err != nil {
		return fmt.Errorf("no Node %q: %w", route.TargetNode, err)
	}
	dest, err := netip.ParsePrefix(route.DestinationCIDR)
	if err != nil {
		return err
	}
	hop, err := routes.HopOf(node, dest)
	if err != nil {
		return err
	}
	want := routes.Route{Destination: dest, Hop: hop}
	held := s.routes
	switch c.h.brk {
	case routesAlwaysWrite:
		held = nil
	case routesNoRepair:
		if c.recorded(want) {
			held = append(held, want)
		}
	}
	steps, err := c.scope().PlanCreate(held, c.recorded, want)
	if err != nil {
		return err
	}
	c.apply(steps)
	return nil
}

func (c *fakeRouteCloud) DeleteRoute(_ context.Context, _ string, route *cloudprovider.Route) error {
	s := c.h.sim
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := routes.ParseName(route.Name)
	if !ok {
		return fmt.Errorf("route %q was not listed by this cloud", route.Name)
	}
	steps, err := c.scope().PlanDelete(s.routes, c.recorded, r)
	if err != nil {
		return err
	}
	c.apply(steps)
	return nil
}

// apply writes a plan's steps, one write each. Callers hold sim.mu.
func (c *fakeRouteCloud) apply(steps []routes.Step) {
	s := c.h.sim
	for _, st := range steps {
		s.writes++
		key := c.cluster + "|" + st.Route.String()
		switch st.Action {
		case routes.AddRecord:
			s.records[key] = true
		case routes.AddRoute:
			s.routes = append(s.routes, st.Route)
		case routes.RemoveRoute:
			s.routes = slices.DeleteFunc(s.routes, func(r routes.Route) bool { return r == st.Route })
		case routes.RemoveRecord:
			delete(s.records, key)
		}
	}
}

var _ cloudprovider.InformerUser = &fakeRouteCloud{}
