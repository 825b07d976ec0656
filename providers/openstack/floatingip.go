package openstack

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/external"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/ownership"
)

func (l *loadBalancers) portFIP(ctx context.Context, cl *clients, portID string) (*floatingips.FloatingIP, error) {
	if portID == "" {
		return nil, nil
	}
	fips, err := listFIPs(ctx, cl, floatingips.ListOpts{PortID: portID})
	if err != nil || len(fips) == 0 {
		return nil, err
	}
	return &fips[0], nil
}

func listFIPs(ctx context.Context, cl *clients, o floatingips.ListOpts) ([]floatingips.FloatingIP, error) {
	pages, err := floatingips.List(cl.network, o).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing floating IPs: %w", err)
	}
	return floatingips.ExtractFloatingIPs(pages)
}

// checkRequestedFIP refuses, before anything is written, a spec.loadBalancerIP that is an
// existing floating IP the Service does not own and the operator did not allow. One already
// on the VIP of the Service's own load balancer is the Service's in use: a floating IP a user
// allocated and the upstream CCM associated (its documented way to keep an address).
func (l *loadBalancers) checkRequestedFIP(ctx context.Context, cl *clients, id ownership.Identity, spec *lbSpec, seen *snapshot) error {
	if spec.fixedFIP == "" || spec.internal || spec.family == v1.IPv6Protocol {
		return nil
	}
	fips, err := listFIPs(ctx, cl, floatingips.ListOpts{FloatingIP: spec.fixedFIP})
	if err != nil {
		return err
	}
	for i := range fips {
		f := &fips[i]
		if fipOwned(id, f) || l.fipAllowed(id, f) {
			continue
		}
		if f.PortID != "" {
			if vip, err := l.ownVIPPort(ctx, cl, id, spec, seen); err != nil || vip == f.PortID {
				if err != nil {
					return err
				}
				continue
			}
		}
		return errFIPNotOwned(spec.fixedFIP)
	}
	return nil
}

// ownVIPPort is the VIP port of the Service's own load balancer of spec's family, "" if none.
func (l *loadBalancers) ownVIPPort(ctx context.Context, cl *clients, id ownership.Identity, spec *lbSpec, seen *snapshot) (string, error) {
	if seen != nil && spec.existingID == "" {
		if lb := seen.lbs[spec.name]; lb != nil && lbOwned(id, lb) == nil {
			return lb.VipPortID, nil
		}
	}
	lb, adopted, err := l.find(ctx, cl, id, spec.name, spec.existingID)
	if isNotOwned(err) || errors.Is(err, errNamedMissing) {
		return "", nil
	}
	if err != nil || lb == nil || adopted {
		return "", err
	}
	return lb.VipPortID, nil
}

// ensureFIP gives the VIP port of the Service's own load balancer a floating IP and returns
// its address: the one it has, the Service's spec.loadBalancerIP (associated if it exists
// and is the Service's or allowed, allocated if not), or a new one from the floating network.
func (r *svcRun) ensureFIP(ctx context.Context, spec *lbSpec, lb *loadbalancers.LoadBalancer) (string, error) {
	l, cl, id, svc, rep := r.l, r.cl, r.id, r.svc, r.rep
	var cur *floatingips.FloatingIP
	if rep.seen.has(lb.ID) {
		cur = rep.seen.fips[lb.VipPortID]
	}
	var err error
	if cur == nil { // none in the snapshot: read it before acting on it
		if cur, err = l.portFIP(ctx, cl, lb.VipPortID); err != nil {
			return "", err
		}
	}
	if cur != nil && (spec.fixedFIP == "" || cur.FloatingIP == spec.fixedFIP) {
		if spec.fixedFIP == "" {
			// As upstream, a floating IP on the VIP stays, whatever subnet is asked for now.
			l.checkFIPSubnet(ctx, cl, svc, spec, cur)
		}
		return cur.FloatingIP, nil
	}
	port := lb.VipPortID
	if cur == nil && spec.fixedFIP == "" {
		// The VIP has none, but the Service has an address: its floating IP was detached (or
		// its load balancer deleted) out of band. The Service's own one goes back, so its
		// address does not change.
		if f, err := l.detachedFIP(ctx, cl, id, svc); err != nil || f != nil {
			if err != nil {
				return "", err
			}
			if _, err := floatingips.Update(ctx, cl.network, f.ID, floatingips.UpdateOpts{PortID: &port}).Extract(); err != nil {
				return "", fmt.Errorf("associating floating IP %s again: %w", f.FloatingIP, err)
			}
			rep.repairs = append(rep.repairs, fmt.Sprintf("floating IP %s was detached from load balancer %s", f.FloatingIP, spec.name))
			return f.FloatingIP, nil
		}
	}
	var existing *floatingips.FloatingIP
	if spec.fixedFIP != "" {
		fips, err := listFIPs(ctx, cl, floatingips.ListOpts{FloatingIP: spec.fixedFIP})
		if err != nil {
			return "", err
		}
		if len(fips) > 0 {
			existing = &fips[0]
			if !fipOwned(id, existing) && !l.fipAllowed(id, existing) {
				return "", errFIPNotOwned(spec.fixedFIP)
			}
			if existing.PortID != "" && existing.PortID != port {
				return "", fmt.Errorf("spec.loadBalancerIP %s is a floating IP already associated with another port", spec.fixedFIP)
			}
		}
	}
	if cur != nil { // spec.loadBalancerIP changed: give the old one back first
		if err := r.releaseFIP(ctx, lb.VipPortID, spec.keepFIP); err != nil {
			return "", err
		}
		if now, err := l.portFIP(ctx, cl, lb.VipPortID); err != nil {
			return "", err
		} else if now != nil {
			return "", fmt.Errorf("the load balancer's VIP holds floating IP %s, which this Service does not own; spec.loadBalancerIP %s cannot replace it", now.FloatingIP, spec.fixedFIP)
		}
	}
	if existing != nil {
		if _, err := floatingips.Update(ctx, cl.network, existing.ID, floatingips.UpdateOpts{PortID: &port}).Extract(); err != nil {
			return "", fmt.Errorf("associating floating IP %s: %w", existing.FloatingIP, err)
		}
		klog.InfoS("Associated existing floating IP", "service", klog.KObj(svc), "ip", existing.FloatingIP)
		return existing.FloatingIP, nil
	}
	netID := spec.floatingNetworkID
	if netID == "" {
		if netID, err = l.externalNetwork(ctx, cl); err != nil {
			return "", err
		}
	}
	opts := floatingips.CreateOpts{
		FloatingNetworkID: netID, SubnetID: spec.floatingSubnet.ID, FloatingIP: spec.fixedFIP,
		PortID: port, Description: fipDescription(id),
	}
	var f *floatingips.FloatingIP
	if spec.fixedFIP == "" && spec.floatingSubnet.matching() {
		f, err = createFIPInMatchingSubnet(ctx, cl, netID, spec.floatingSubnet, opts)
	} else {
		f, err = floatingips.Create(ctx, cl.network, opts).Extract()
	}
	if err != nil {
		return "", fmt.Errorf("allocating a floating IP on network %s: %w", netID, err)
	}
	klog.InfoS("Allocated floating IP", "service", klog.KObj(svc), "ip", f.FloatingIP, "network", netID)
	return f.FloatingIP, nil
}

// detachedFIP is the floating IP of the Service's status that ccm allocated for it and that
// is associated with nothing, or nil.
func (l *loadBalancers) detachedFIP(ctx context.Context, cl *clients, id ownership.Identity, svc *v1.Service) (*floatingips.FloatingIP, error) {
	for _, a := range statusAddrs(svc) {
		if !a.Is4() {
			continue
		}
		fips, err := listFIPs(ctx, cl, floatingips.ListOpts{FloatingIP: a.String()})
		if err != nil {
			return nil, err
		}
		for i := range fips {
			if f := &fips[i]; f.PortID == "" && fipOwned(id, f) {
				return f, nil
			}
		}
	}
	return nil, nil
}

// adoptedAddress is the address of a load balancer the Service named by load-balancer-id and
// does not own: its floating IP if it has one, else its VIP. Its VIP and floating IP are
// never changed.
func (l *loadBalancers) adoptedAddress(ctx context.Context, cl *clients, spec *lbSpec, lb *loadbalancers.LoadBalancer) (string, error) {
	cur, err := l.portFIP(ctx, cl, lb.VipPortID)
	if err != nil {
		return "", err
	}
	addr := lb.VipAddress
	if cur != nil {
		addr = cur.FloatingIP
	}
	if spec.fixedFIP != "" && spec.fixedFIP != addr {
		return "", fmt.Errorf("spec.loadBalancerIP %s: the load balancer named by annotation %s is not this Service's, and ccm never changes its address", spec.fixedFIP, annLoadBalancerID)
	}
	return addr, nil
}

// releaseFIP gives back the floating IP on the VIP port of the Service's own load balancer:
// one ccm allocated for the Service is deleted (only disassociated with keep-floatingip); one
// the operator allowed is disassociated; any other is left as it is (Neutron drops its
// association when the load balancer's port goes).
func (r *svcRun) releaseFIP(ctx context.Context, portID string, keep bool) error {
	l, cl, id, svc := r.l, r.cl, r.id, r.svc
	f, err := l.portFIP(ctx, cl, portID)
	if err != nil || f == nil {
		return err
	}
	owned := fipOwned(id, f)
	switch {
	case owned && !keep:
		if err := floatingips.Delete(ctx, cl.network, f.ID).ExtractErr(); err != nil {
			return fmt.Errorf("deleting floating IP %s: %w", f.FloatingIP, err)
		}
		klog.InfoS("Deleted floating IP", "service", klog.KObj(svc), "ip", f.FloatingIP)
		return nil
	case owned || l.fipAllowed(id, f):
		empty := "" // gophercloud sends "port_id": null
		if _, err := floatingips.Update(ctx, cl.network, f.ID, floatingips.UpdateOpts{PortID: &empty}).Extract(); err != nil {
			return fmt.Errorf("disassociating floating IP %s: %w", f.FloatingIP, err)
		}
		klog.InfoS("Kept floating IP (allowed by the operator, or keep-floatingip)", "service", klog.KObj(svc), "ip", f.FloatingIP)
	default:
		klog.InfoS("Leaving a floating IP this Service does not own as it is", "service", klog.KObj(svc), "ip", f.FloatingIP)
	}
	return nil
}

// externalNetwork picks the floating network when none is configured, by the upstream CCM's
// rule: the first external network, in Neutron's list order, that has a subnet and where one
// of its subnets is IPv4 (or is not visible to the project: upstream takes that one too).
func (l *loadBalancers) externalNetwork(ctx context.Context, cl *clients) (string, error) {
	yes := true
	pages, err := networks.List(cl.network, external.ListOptsExt{ListOptsBuilder: networks.ListOpts{}, External: &yes}).AllPages(ctx)
	if err != nil {
		return "", fmt.Errorf("looking for an external network: %w", err)
	}
	nets, err := networks.ExtractNetworks(pages)
	if err != nil {
		return "", err
	}
	for _, n := range nets {
		if len(n.Subnets) == 0 {
			continue
		}
		sp, err := subnets.List(cl.network, subnets.ListOpts{NetworkID: n.ID}).AllPages(ctx)
		if err != nil {
			return "", fmt.Errorf("listing the subnets of external network %s: %w", n.ID, err)
		}
		subs, err := subnets.ExtractSubnets(sp)
		if err != nil {
			return "", err
		}
		if pickFloatingNetwork(n.Subnets, subs) {
			return n.ID, nil
		}
	}
	return "", fmt.Errorf("no external network with an IPv4 subnet for floating IPs: set [LoadBalancer] floating-network-id or annotation %s", annFloatingNetworkID)
}

// pickFloatingNetwork: a network whose subnet IDs are ids (subs: those the project can see)
// can give floating IPs, by upstream's rule. Pure.
func pickFloatingNetwork(ids []string, subs []subnets.Subnet) bool {
	for _, id := range ids {
		i := slices.IndexFunc(subs, func(s subnets.Subnet) bool { return s.ID == id })
		if i < 0 || subs[i].IPVersion == 4 {
			return true
		}
	}
	return false
}

// createFIPInMatchingSubnet allocates the floating IP, as upstream, from the first subnet of
// the floating network (in Neutron's order) that sel picks and that has a free address: a
// subnet whose create fails is skipped. No subnet picked, or none with room, is an error
// naming sel; nothing is created then.
func createFIPInMatchingSubnet(ctx context.Context, cl *clients, netID string, sel fipSubnetSel, opts floatingips.CreateOpts) (*floatingips.FloatingIP, error) {
	subs, err := matchingFIPSubnets(ctx, cl, netID, sel)
	if err != nil {
		return nil, err
	}
	var last error
	for _, s := range subs {
		opts.SubnetID = s.ID
		f, err := floatingips.Create(ctx, cl.network, opts).Extract()
		if err == nil {
			return f, nil
		}
		klog.V(2).InfoS("No floating IP from this subnet; trying the next", "subnet", s.Name, "err", err)
		last = err
	}
	return nil, fmt.Errorf("no subnet matching %s has a free floating IP (last error: %w)", sel, last)
}

// matchingFIPSubnets are the subnets of floating network netID that sel picks, in Neutron's
// order; none is an error naming sel's keys and values.
func matchingFIPSubnets(ctx context.Context, cl *clients, netID string, sel fipSubnetSel) ([]subnets.Subnet, error) {
	if _, err := pickFIPSubnets(sel, nil); err != nil {
		return nil, err // a pattern that does not compile: nothing to read
	}
	subs, err := listSubnets(ctx, cl, fipSubnetListOpts(netID, sel))
	if err != nil {
		return nil, err
	}
	if subs, err = pickFIPSubnets(sel, subs); err != nil {
		return nil, err
	}
	if len(subs) == 0 {
		return nil, fmt.Errorf("no subnet of floating network %s matches %s", netID, sel)
	}
	return subs, nil
}

// checkFIPSubnetMatches: before a public load balancer is created, a floating IP subnet
// picked by pattern or tags must exist, so that a selection matching nothing leaves nothing
// behind (upstream creates the load balancer and then fails at its floating IP).
func (l *loadBalancers) checkFIPSubnetMatches(ctx context.Context, cl *clients, id ownership.Identity, spec *lbSpec) error {
	if spec.internal || spec.family == v1.IPv6Protocol || spec.fixedFIP != "" || spec.existingID != "" || !spec.floatingSubnet.matching() {
		return nil
	}
	netID := spec.floatingNetworkID
	if netID == "" {
		var err error
		if netID, err = l.externalNetwork(ctx, cl); err != nil {
			return err
		}
	}
	picked, err := matchingFIPSubnets(ctx, cl, netID, spec.floatingSubnet)
	if err != nil {
		return err
	}
	return l.checkPickedFIPSubnets(id, spec.floatingSubnet, picked)
}

func listSubnets(ctx context.Context, cl *clients, o subnets.ListOpts) ([]subnets.Subnet, error) {
	pages, err := subnets.List(cl.network, o).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the subnets of network %s: %w", o.NetworkID, err)
	}
	return subnets.ExtractSubnets(pages)
}
