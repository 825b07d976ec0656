package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/routes"
)

// routeTable implements cloudprovider.Routes on the Neutron router [Route] router-id: each
// Node's Pod CIDR routed through the Node's address, and allowed on the Node's port. Only
// this cluster's routes are listed, changed or deleted (common/routes); the router may be
// shared with other clusters and an operator's own routes.
type routeTable struct {
	c        *Cloud
	routerID string

	mu     sync.Mutex
	nodes  corelisters.NodeLister // SetInformers
	cidrs  []netip.Prefix         // UseClusterCIDRs
	atomic *bool                  // Neutron has extraroute-atomic; nil until asked
	// rmw serialises read-modify-write route updates (no extraroute-atomic): the route
	// controller creates routes concurrently, and each would otherwise retry on the others.
	rmw sync.Mutex
}

var _ cloudprovider.Routes = (*routeTable)(nil)

// Routes implements cloudprovider.Interface: with [Route] router-id set.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if c.rt == nil {
		return nil, false
	}
	return c.rt, true
}

// SetInformers implements cloudprovider.InformerUser: the Nodes say which routes are this
// cluster's and where a Node's route goes.
func (c *Cloud) SetInformers(f informers.SharedInformerFactory) {
	if c.rt != nil {
		c.rt.mu.Lock()
		c.rt.nodes = f.Core().V1().Nodes().Lister()
		c.rt.mu.Unlock()
	}
}

// UseClusterCIDRs implements routes.ClusterCIDRScoped.
func (c *Cloud) UseClusterCIDRs(cidrs []netip.Prefix) {
	if c.rt != nil {
		c.rt.mu.Lock()
		c.rt.cidrs = slices.Clone(cidrs)
		c.rt.mu.Unlock()
	}
}

// scope is this cluster's routes' scope now.
func (t *routeTable) scope() (routes.Scope, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes == nil {
		return routes.Scope{}, fmt.Errorf("openstack: routes: no Node informer was handed over")
	}
	nodes, err := t.nodes.List(labels.Everything())
	if err != nil {
		return routes.Scope{}, err
	}
	return routes.Scope{ClusterCIDRs: t.cidrs, Nodes: routes.NodeHops(nodes)}, nil
}

func (t *routeTable) node(name types.NodeName) (*v1.Node, error) {
	t.mu.Lock()
	lister := t.nodes
	t.mu.Unlock()
	if lister == nil {
		return nil, fmt.Errorf("openstack: routes: no Node informer was handed over")
	}
	n, err := lister.Get(string(name))
	if err != nil {
		return nil, fmt.Errorf("openstack: routes: Node %q: %w", name, err)
	}
	return n, nil
}

// observe reads the router: the routes it holds and which are recorded as cluster's.
func (t *routeTable) observe(ctx context.Context, cl *clients, cluster string) (*routers.Router, []routes.Route, func(routes.Route) bool, error) {
	r, err := routers.Get(ctx, cl.network, t.routerID).Extract()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("openstack: getting router %s ([Route] router-id): %w", t.routerID, err)
	}
	return r, heldRoutes(r.Routes), recordedIn(cluster, r.Tags), nil
}

func (t *routeTable) cluster(name string) string {
	if n := t.c.ClusterName(); n != "" {
		return n
	}
	return name
}

// ListRoutes implements cloudprovider.Routes: this cluster's routes only.
func (t *routeTable) ListRoutes(ctx context.Context, clusterName string) ([]*cloudprovider.Route, error) {
	scope, err := t.scope()
	if err != nil {
		return nil, err
	}
	cl, err := t.c.sess.get(ctx)
	if err != nil {
		return nil, err
	}
	_, held, recorded, err := t.observe(ctx, cl, t.cluster(clusterName))
	if err != nil {
		return nil, err
	}
	return scope.List(held, recorded), nil
}

// CreateRoute implements cloudprovider.Routes: the record, the route, then the Pod CIDR
// allowed on the Node's port; each only if missing.
func (t *routeTable) CreateRoute(ctx context.Context, clusterName string, _ string, route *cloudprovider.Route) error {
	scope, err := t.scope()
	if err != nil {
		return err
	}
	node, err := t.node(route.TargetNode)
	if err != nil {
		return err
	}
	dest, err := netip.ParsePrefix(route.DestinationCIDR)
	if err != nil {
		return fmt.Errorf("openstack: route for Node %q: destination %q: %w", route.TargetNode, route.DestinationCIDR, err)
	}
	hop, err := routes.HopOf(node, dest)
	if err != nil {
		return fmt.Errorf("openstack: %w", err)
	}
	want := routes.Route{Destination: dest.Masked(), Hop: hop}
	cl, err := t.c.sess.get(ctx)
	if err != nil {
		return err
	}
	cluster := t.cluster(clusterName)
	_, held, recorded, err := t.observe(ctx, cl, cluster)
	if err != nil {
		return err
	}
	steps, err := scope.PlanCreate(held, recorded, want)
	if err != nil {
		return fmt.Errorf("openstack: %w", err)
	}
	port, err := nodePort(ctx, cl, node, hop)
	if err != nil {
		return err
	}
	if err := t.apply(ctx, cl, cluster, steps); err != nil {
		return err
	}
	if port != nil {
		if err := updatePortPairs(ctx, cl, *port, dest.Masked(), pairsWith); err != nil {
			return err
		}
	}
	if len(steps) > 0 {
		klog.InfoS("Created route", "route", want.String(), "node", node.Name, "router", t.routerID)
	}
	return nil
}

// DeleteRoute implements cloudprovider.Routes: the route, the Pod CIDR on its Node's port (if
// the port is still there), then the record; another owner's route is refused.
func (t *routeTable) DeleteRoute(ctx context.Context, clusterName string, route *cloudprovider.Route) error {
	r, ok := routes.ParseName(route.Name)
	if !ok {
		return fmt.Errorf("openstack: route %q was not listed by ccm (its name is \"<destination> via <next hop>\"): not deleted", route.Name)
	}
	scope, err := t.scope()
	if err != nil {
		return err
	}
	cl, err := t.c.sess.get(ctx)
	if err != nil {
		return err
	}
	cluster := t.cluster(clusterName)
	_, held, recorded, err := t.observe(ctx, cl, cluster)
	if err != nil {
		return err
	}
	steps, err := scope.PlanDelete(held, recorded, r)
	if err != nil {
		return fmt.Errorf("openstack: %w", err)
	}
	if len(steps) == 0 {
		return nil
	}
	port, err := t.pairPort(ctx, cl, route.TargetNode, r)
	if err != nil {
		return err
	}
	removal, record := steps, []routes.Step(nil)
	if last := steps[len(steps)-1]; last.Action == routes.RemoveRecord {
		removal, record = steps[:len(steps)-1], steps[len(steps)-1:]
	}
	if err := t.apply(ctx, cl, cluster, removal); err != nil {
		return err
	}
	if port != nil {
		if err := updatePortPairs(ctx, cl, *port, r.Destination, pairsWithout); err != nil {
			return err
		}
	}
	if err := t.apply(ctx, cl, cluster, record); err != nil {
		return err
	}
	klog.InfoS("Deleted route", "route", r.String(), "node", route.TargetNode, "router", t.routerID)
	return nil
}

// nodePort is the port of node's server that holds hop; nil when port security is off on it
// (no address pair is needed then). No such port is an error: the route would lead nowhere.
func nodePort(ctx context.Context, cl *clients, node *v1.Node, hop string) (*ports.Port, error) {
	sid, err := serverID(node.Spec.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("openstack: route for Node %q: %w", node.Name, err)
	}
	all, err := listServerPorts(ctx, cl, sid)
	if err != nil {
		return nil, fmt.Errorf("openstack: %w", err)
	}
	for _, p := range all {
		if slices.ContainsFunc(p.FixedIPs, func(ip ports.IP) bool { return sameAddr(ip.IPAddress, hop) }) {
			if !p.takesGroups() {
				return nil, nil
			}
			return &p.Port, nil
		}
	}
	return nil, fmt.Errorf("openstack: route for Node %q: no port of server %s holds its address %s", node.Name, sid, hop)
}

// pairPort is the port that allows r's destination for its hop: the Node's own port while
// the Node is there, else a server's port holding the hop with that pair (a Node deleted with
// its server running); nil if none.
func (t *routeTable) pairPort(ctx context.Context, cl *clients, name types.NodeName, r routes.Route) (*ports.Port, error) {
	if node, err := t.node(name); err == nil {
		if hop, err := routes.HopOf(node, r.Destination); err == nil && hop == r.Hop {
			p, err := nodePort(ctx, cl, node, r.Hop)
			if err == nil {
				return p, nil
			}
		}
	}
	all, err := listPorts(ctx, cl, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: r.Hop}}})
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if _, has := pairsWithout(p, r.Destination); has && strings.HasPrefix(p.DeviceOwner, "compute:") {
			return &p, nil
		}
	}
	return nil, nil
}

func sameAddr(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x.Unmap() == y.Unmap()
}

// hasAtomic reports whether Neutron has extraroute-atomic (routes added and removed one by
// one, with no read-modify-write of the router's list); asked once per process.
func (t *routeTable) hasAtomic(ctx context.Context, cl *clients) (bool, error) {
	t.mu.Lock()
	known := t.atomic
	t.mu.Unlock()
	if known != nil {
		return *known, nil
	}
	_, err := extensions.Get(ctx, cl.network, "extraroute-atomic").Extract()
	if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return false, fmt.Errorf("openstack: asking Neutron for extraroute-atomic: %w", err)
	}
	has := err == nil
	t.mu.Lock()
	t.atomic = &has
	t.mu.Unlock()
	klog.InfoS("Neutron routes", "router", t.routerID, "extrarouteAtomic", has)
	return has, nil
}

// apply writes steps in order.
func (t *routeTable) apply(ctx context.Context, cl *clients, cluster string, steps []routes.Step) error {
	for _, s := range steps {
		var err error
		switch s.Action {
		case routes.AddRecord:
			err = attributestags.Add(ctx, cl.network, "routers", t.routerID, routeRecord(cluster, s.Route)).ExtractErr()
		case routes.RemoveRecord:
			err = attributestags.Delete(ctx, cl.network, "routers", t.routerID, routeRecord(cluster, s.Route)).ExtractErr()
			if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
				err = nil
			}
		case routes.AddRoute, routes.RemoveRoute:
			err = t.changeRoute(ctx, cl, s)
		}
		if err != nil {
			return fmt.Errorf("openstack: router %s: %s: %w", t.routerID, s, err)
		}
	}
	return nil
}

// changeRoute adds or removes one route: with extraroute-atomic alone; otherwise by a
// compare-and-swap of the router's whole list, so another writer's route is never lost.
func (t *routeTable) changeRoute(ctx context.Context, cl *clients, s routes.Step) error {
	one := &[]routers.Route{{DestinationCIDR: s.Route.Destination.String(), NextHop: s.Route.Hop}}
	atomic, err := t.hasAtomic(ctx, cl)
	switch {
	case err != nil:
		return err
	case atomic && s.Action == routes.AddRoute:
		return extraroutes.Add(ctx, cl.network, t.routerID, extraroutes.Opts{Routes: one}).Err
	case atomic:
		return extraroutes.Remove(ctx, cl.network, t.routerID, extraroutes.Opts{Routes: one}).Err
	}
	t.rmw.Lock()
	defer t.rmw.Unlock()
	return casRouter(ctx, cl, t.routerID, func(rs []routers.Route) []routers.Route {
		rs = slices.DeleteFunc(rs, func(r routers.Route) bool {
			return slices.Equal(heldRoutes([]routers.Route{r}), []routes.Route{s.Route})
		})
		if s.Action == routes.AddRoute {
			rs = append(rs, (*one)[0])
		}
		return rs
	})
}
