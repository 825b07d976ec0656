package openstack

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/routes"
)

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
