package openstack

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// reasonFIPSubnetNotApplied: the Service's floating IP is not from the subnet its floating
// subnet settings pick now, and ccm keeps it (as upstream) rather than move the address.
const reasonFIPSubnetNotApplied = "FloatingSubnetNotApplied"

// checkFIPSubnet says, in a Warning at most once an hour, when the floating IP the Service
// keeps is in no subnet its floating subnet selection picks (the setting changed, or the
// address was made by hand or by the upstream CCM under other settings). Upstream keeps the
// address silently; so does ccm, but says so. Nothing is written. The subnets are read once
// per Service, selection and address, not at every sync.
func (l *loadBalancers) checkFIPSubnet(ctx context.Context, cl *clients, svc *v1.Service, spec *lbSpec, cur *floatingips.FloatingIP) {
	sel := spec.floatingSubnet
	if !sel.set() {
		return
	}
	if _, err := subnetNameMatcher(sel.Pattern); sel.matching() && sel.Pattern != "" && err != nil {
		return // the spec's Warning names the annotation; nothing to read
	}
	key := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s", sel, cur.FloatingNetworkID, spec.floatingNetworkID, cur.FloatingIP, spec.name)
	if last, ok := l.fipSubnetChecked.Load(svc.UID); ok && last == key {
		return
	}
	subs, err := l.selectedSubnets(ctx, cl, or(spec.floatingNetworkID, cur.FloatingNetworkID), sel)
	if err != nil {
		klog.V(2).InfoS("Could not check the floating IP's subnet", "service", klog.KObj(svc), "err", err)
		return // read again at the next sync
	}
	l.fipSubnetChecked.Store(svc.UID, key)
	if msg := fipSubnetNotApplied(sel, cur.FloatingIP, subs); msg != "" {
		l.c.events.Advise(svc, reasonFIPSubnetNotApplied, msg)
	}
}

// selectedSubnets are the subnets of network netID that sel picks.
func (l *loadBalancers) selectedSubnets(ctx context.Context, cl *clients, netID string, sel fipSubnetSel) ([]subnets.Subnet, error) {
	if sel.ID != "" {
		s, err := subnets.Get(ctx, cl.network, sel.ID).Extract()
		if err != nil {
			return nil, err
		}
		return []subnets.Subnet{*s}, nil
	}
	subs, err := listSubnets(ctx, cl, fipSubnetListOpts(netID, sel))
	if err != nil {
		return nil, err
	}
	return pickFIPSubnets(sel, subs)
}

// fipSubnetNotApplied is the Warning when address is in none of subs ("" when it is in one).
// Pure.
func fipSubnetNotApplied(sel fipSubnetSel, address string, subs []subnets.Subnet) string {
	a, err := netip.ParseAddr(address)
	if err != nil {
		return ""
	}
	for _, s := range subs {
		if p, err := netip.ParsePrefix(s.CIDR); err == nil && p.Contains(a.Unmap()) {
			return ""
		}
	}
	return fmt.Sprintf("floating IP %s is not from a subnet that %s picks: as upstream, a load balancer keeps its floating IP (the Service's address); the setting applies to new floating IPs (recreate the Service to move it)", address, sel)
}
