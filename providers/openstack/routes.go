package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
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

// observed is what one call reads: the clients, the cluster's name, the routes the router
// holds and which of them are recorded as the cluster's.
type observed struct {
	cl       *clients
	cluster  string
	held     []routes.Route
	recorded func(routes.Route) bool
}

// observe reads the router for cluster clusterName.
func (t *routeTable) observe(ctx context.Context, clusterName string) (observed, error) {
	cl, err := t.c.sess.get(ctx)
	if err != nil {
		return observed{}, err
	}
	cluster := t.cluster(clusterName)
	r, err := routers.Get(ctx, cl.network, t.routerID).Extract()
	if err != nil {
		return observed{}, fmt.Errorf("openstack: getting router %s ([Route] router-id): %w", t.routerID, err)
	}
	return observed{cl: cl, cluster: cluster, held: heldRoutes(r.Routes), recorded: recordedIn(cluster, r.Tags)}, nil
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
	o, err := t.observe(ctx, clusterName)
	if err != nil {
		return nil, err
	}
	return scope.List(o.held, o.recorded), nil
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
	o, err := t.observe(ctx, clusterName)
	if err != nil {
		return err
	}
	steps, err := scope.PlanCreate(o.held, o.recorded, want)
	if err != nil {
		return fmt.Errorf("openstack: %w", err)
	}
	port, err := nodePort(ctx, o.cl, node, hop)
	if err != nil {
		return err
	}
	if err := t.apply(ctx, o.cl, o.cluster, steps); err != nil {
		return err
	}
	if port != nil {
		if err := updatePortPairs(ctx, o.cl, *port, dest.Masked(), pairsWith); err != nil {
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
	o, err := t.observe(ctx, clusterName)
	if err != nil {
		return err
	}
	steps, err := scope.PlanDelete(o.held, o.recorded, r)
	if err != nil {
		return fmt.Errorf("openstack: %w", err)
	}
	if len(steps) == 0 {
		return nil
	}
	port, err := t.pairPort(ctx, o.cl, route.TargetNode, r)
	if err != nil {
		return err
	}
	removal, record := steps, []routes.Step(nil)
	if last := steps[len(steps)-1]; last.Action == routes.RemoveRecord {
		removal, record = steps[:len(steps)-1], steps[len(steps)-1:]
	}
	if err := t.apply(ctx, o.cl, o.cluster, removal); err != nil {
		return err
	}
	if port != nil {
		if err := updatePortPairs(ctx, o.cl, *port, r.Destination, pairsWithout); err != nil {
			return err
		}
	}
	if err := t.apply(ctx, o.cl, o.cluster, record); err != nil {
		return err
	}
	klog.InfoS("Deleted route", "route", r.String(), "node", route.TargetNode, "router", t.routerID)
	return nil
}
