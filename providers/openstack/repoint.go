package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
)

// A Service that moves between load balancers by load-balancer-id:
//
//   - onto another's (shared, or allowed by the operator) while it has its own: the move is
//     refused, and the Service stays on its own. Moving would leave its own load balancer and
//     floating IP behind, still counted against the project's quota while the Service lives,
//     and a delete follows the annotation: re-pointing, deleting and creating the Service again
//     would make load balancers without limit. Refusing loses nothing (the Service keeps its
//     address); moving and deleting its own in the same sync would change the address the
//     tenant's clients use on an annotation edit. A Warning names the annotation and says how
//     to share instead (create the Service with it). A load-balancer-id that only records
//     another load balancer (recordedLoadBalancer: an edit of ccm's record) is put back the same
//     way, without a Warning. Delete takes the Service's own load balancer too, whatever the
//     annotation names (deleteOne).
//   - off another's, onto its own or a third (the annotation removed or changed): once the new
//     one serves, the Service's listeners and its name go from the one its status still shows,
//     as when the Service is deleted from it (leaveShared: the last user deletes an ownerless
//     one).

// reasonLoadBalancerIDNotApplied: load-balancer-id was not followed.
const reasonLoadBalancerIDNotApplied = "LoadBalancerIDNotApplied"

// ownBeside is the Service's own load balancer, found by its name, while its load-balancer-id
// names lb, not its own; nil if it has none. With a bulk read that shows no load balancer of
// the Service's names, and none made by this process since (a new one may be missing from
// lists for a while), nothing is read.
func (l *loadBalancers) ownBeside(ctx context.Context, cl *clients, id ownership.Identity, name string, seen *snapshot) (*loadbalancers.LoadBalancer, error) {
	if seen != nil {
		if own := seen.lbs[name]; own != nil && lbOwned(id, own) == nil {
			return own, nil
		}
		l.mu.Lock()
		known := l.ids[name]
		l.mu.Unlock()
		if !seen.named[name] && !seen.named[upstreamName(id)] && known == "" {
			return nil, nil
		}
	}
	own, _, err := l.find(ctx, cl, id, name, "")
	if isNotOwned(err) {
		return nil, nil // a load balancer of that name that is not the Service's (earlierservice.go)
	}
	return own, err
}

// keepOwn decides the load balancer of spec's family for a Service whose load-balancer-id led
// to lb, not its own (adopted): the Service's own when it has one (with a Warning when the
// annotation asked for the move), else lb.
func (r *svcRun) keepOwn(ctx context.Context, spec *lbSpec, lb *loadbalancers.LoadBalancer) (*loadbalancers.LoadBalancer, bool, error) {
	own, err := r.l.ownBeside(ctx, r.cl, r.id, spec.name, r.rep.seen)
	if err != nil || own == nil {
		return lb, true, err
	}
	if spec.existingID != "" {
		r.l.c.events.Advise(r.svc, reasonLoadBalancerIDNotApplied, fmt.Sprintf("annotation %s names a load balancer that is not this Service's, while the Service has its own (%s): "+
			"the Service stays on its own (moving would leave it behind); remove the annotation, or delete the Service and create it with the annotation to share that load balancer",
			annLoadBalancerID, spec.name))
	}
	return own, false, nil
}

// leaveFormer takes the Service's listeners and name back from the load balancer its status
// still shows for spec's family, when the Service is now served at addr by lbID instead.
func (r *svcRun) leaveFormer(ctx context.Context, spec *lbSpec, lbID, addr string) error {
	l, cl, id, svc := r.l, r.cl, r.id, r.svc
	now, _ := netip.ParseAddr(addr)
	for _, a := range statusAddrs(svc) {
		if a.Is6() != (spec.family == v1.IPv6Protocol) || a.Unmap() == now.Unmap() {
			continue
		}
		former, err := l.servedAt(ctx, cl, a.String())
		if err != nil {
			return err
		}
		for i := range former {
			f := &former[i]
			if f.ID == lbID || lbOwned(id, f) == nil {
				continue
			}
			if n, err := l.ourListeners(ctx, cl, f.ID, id); err != nil {
				return err
			} else if n == 0 && !slices.ContainsFunc(f.Tags, func(t string) bool { return ownName(id, spec.name, t) }) {
				continue
			}
			klog.InfoS("The Service moved off a load balancer it used by load-balancer-id: removing its listeners there", "service", klog.KObj(svc), "id", f.ID)
			if err := r.leaveNamed(ctx, spec.name, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// servedAt are the load balancers serving addr: the one whose VIP port holds floating IP addr,
// else those with VIP addr.
func (l *loadBalancers) servedAt(ctx context.Context, cl *clients, addr string) ([]loadbalancers.LoadBalancer, error) {
	fips, err := listFIPs(ctx, cl, floatingips.ListOpts{FloatingIP: addr})
	if err != nil {
		return nil, err
	}
	opts := loadbalancers.ListOpts{VipAddress: addr}
	if len(fips) > 0 {
		if fips[0].PortID == "" {
			return nil, nil
		}
		opts = loadbalancers.ListOpts{VipPortID: fips[0].PortID}
	}
	pages, err := loadbalancers.List(cl.lb, opts).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the load balancers serving %s: %w", addr, err)
	}
	all, err := loadbalancers.ExtractLoadBalancers(pages)
	return slices.DeleteFunc(all, func(lb loadbalancers.LoadBalancer) bool {
		return lb.VipPortID != opts.VipPortID && lb.VipAddress != opts.VipAddress // the filter is Octavia's: checked again
	}), err
}
