package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/subnets"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// reasonFIPSubnetNotApplied: the Service's floating IP is not from the subnet its floating
// subnet settings pick now, and ccm keeps it (as upstream) rather than move the address.
const reasonFIPSubnetNotApplied = "FloatingSubnetNotApplied"

// checkFIPSubnet says, in a Warning, when the floating IP the Service keeps is in no subnet
// its floating subnet selection picks (the setting changed, or the address was made by hand
// or by the upstream CCM under other settings). Upstream keeps the address silently; so does
// ccm, but says so, once per ccm process, Service, selection and address. Nothing is
// written. The subnets a selection picks are read once for every Service that shares it
// (fipSubnetLists); a read that fails is not retried for fipSubnetListFor, and an empty
// answer (the floating network's subnets not visible to ccm's project) proves nothing, so
// it gives no Warning.
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
	subs, err := l.sharedSelectedSubnets(ctx, cl, or(spec.floatingNetworkID, cur.FloatingNetworkID), sel)
	if err != nil {
		klog.V(2).InfoS("Could not check the floating IP's subnet", "service", klog.KObj(svc), "err", err)
		return // read again once the failure is older than fipSubnetListFor
	}
	l.fipSubnetChecked.Store(svc.UID, key)
	if msg := fipSubnetNotApplied(sel, cur.FloatingIP, subs); msg != "" {
		l.c.events.Advise(svc, reasonFIPSubnetNotApplied, msg)
	}
}

// fipSubnetListFor is how long the subnets a selection picks (or the failure to read them)
// serve every Service with that selection: after a restart, N Services make one read.
const fipSubnetListFor = 10 * time.Minute

// fipSubnetList is one read of the subnets a selection picks on a network.
type fipSubnetList struct {
	subs []subnets.Subnet
	err  error
	at   time.Time
}

// sharedSelectedSubnets is selectedSubnets shared by the Services with the same network and
// selection for fipSubnetListFor; concurrent first reads wait for one.
func (l *loadBalancers) sharedSelectedSubnets(ctx context.Context, cl *clients, netID string, sel fipSubnetSel) ([]subnets.Subnet, error) {
	key := netID + "\x00" + sel.String()
	fresh := func() (*fipSubnetList, bool) {
		v, ok := l.fipSubnetLists.Load(key)
		if !ok || time.Since(v.(*fipSubnetList).at) >= fipSubnetListFor {
			return nil, false
		}
		return v.(*fipSubnetList), true
	}
	if r, ok := fresh(); ok {
		return r.subs, r.err
	}
	l.fipSubnetListMu.Lock()
	defer l.fipSubnetListMu.Unlock()
	if r, ok := fresh(); ok {
		return r.subs, r.err
	}
	subs, err := l.selectedSubnets(ctx, cl, netID, sel)
	l.fipSubnetLists.Store(key, &fipSubnetList{subs: subs, err: err, at: time.Now()})
	return subs, err
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

// fipSubnetNotApplied is the Warning when address is in none of subs ("" when it is in one,
// or when subs is empty). Pure.
func fipSubnetNotApplied(sel fipSubnetSel, address string, subs []subnets.Subnet) string {
	a, err := netip.ParseAddr(address)
	if err != nil || len(subs) == 0 {
		return "" // no subnet seen: nothing to compare with (not visible, or none matches)
	}
	for _, s := range subs {
		if p, err := netip.ParsePrefix(s.CIDR); err == nil && p.Contains(a.Unmap()) {
			return ""
		}
	}
	return fmt.Sprintf("floating IP %s is not from a subnet that %s picks: as upstream, a load balancer keeps its floating IP (the Service's address); the setting applies to new floating IPs (recreate the Service to move it)", address, sel)
}
