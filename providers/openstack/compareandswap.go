package openstack

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"slices"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/klog/v2"
)

// casAttempts bounds the compare-and-swap retries of one port's or router's list.
const casAttempts = 5

// casPort changes a port with Neutron's compare-and-swap: the update carries If-Match:
// revision_number=N of the port as read, and a 412 (someone changed the port meanwhile) reads
// it again and asks change again with the fresh port. change returns the update and whether
// there is anything to write; what names the field in errors.
func casPort(ctx context.Context, cl *clients, p ports.Port, what string, change func(ports.Port) (ports.UpdateOpts, bool)) error {
	for attempt := 1; ; attempt++ {
		opts, write := change(p)
		if !write {
			return nil
		}
		rev := p.RevisionNumber
		opts.RevisionNumber = &rev
		_, err := ports.Update(ctx, cl.network, p.ID, opts).Extract()
		if err == nil {
			return nil
		}
		if !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) || attempt == casAttempts {
			return fmt.Errorf("setting %s of port %s: %w", what, p.ID, err)
		}
		klog.V(2).InfoS("Port changed since it was read; reading it again", "port", p.ID, "revision", rev)
		fresh, err := ports.Get(ctx, cl.network, p.ID).Extract()
		if err != nil {
			return fmt.Errorf("getting port %s: %w", p.ID, err)
		}
		p = *fresh
	}
}

// updatePortPairs sets port p's allowed address pairs to f(p, dest), with casPort.
func updatePortPairs(ctx context.Context, cl *clients, p ports.Port, dest netip.Prefix, f func(ports.Port, netip.Prefix) ([]ports.AddressPair, bool)) error {
	return casPort(ctx, cl, p, "the allowed address pairs", func(p ports.Port) (ports.UpdateOpts, bool) {
		pairs, changed := f(p, dest)
		return ports.UpdateOpts{AllowedAddressPairs: &pairs}, changed
	})
}

// casRouter changes a router's route list with the same compare-and-swap as casPort, for a
// Neutron without extraroute-atomic.
func casRouter(ctx context.Context, cl *clients, id string, change func([]routers.Route) []routers.Route) error {
	for attempt := 1; ; attempt++ {
		r, err := routers.Get(ctx, cl.network, id).Extract()
		if err != nil {
			return fmt.Errorf("getting router %s: %w", id, err)
		}
		next := change(slices.Clone(r.Routes))
		if slices.Equal(next, r.Routes) {
			return nil
		}
		rev := r.RevisionNumber
		_, err = routers.Update(ctx, cl.network, id, routers.UpdateOpts{Routes: &next, RevisionNumber: &rev}).Extract()
		if err == nil {
			return nil
		}
		if !gophercloud.ResponseCodeIs(err, http.StatusPreconditionFailed) || attempt == casAttempts {
			return fmt.Errorf("setting the routes of router %s: %w", id, err)
		}
		klog.V(2).InfoS("Router changed since it was read; reading it again", "router", id, "revision", rev)
	}
}
