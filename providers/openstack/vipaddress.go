package openstack

import (
	"fmt"
	"net/netip"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"
)

// requestedVIP is the VIP address a load balancer of family f is created with: as upstream,
// spec.loadBalancerIP (lbIP) is the VIP of an internal or IPv6 load balancer (it is the floating
// IP of a public IPv4 one); of a dual-stack Service, only the family of the address takes it.
func requestedVIP(lbIP string, internal bool, f v1.IPFamily) string {
	a, err := netip.ParseAddr(lbIP)
	if err != nil || !(internal || f == v1.IPv6Protocol) || a.Is6() != (f == v1.IPv6Protocol) {
		return ""
	}
	return a.String()
}

// vipNotApplied says why a load balancer's VIP is not the spec.loadBalancerIP asked for ("" when
// it is, or none is asked): Octavia cannot change a VIP, so, as upstream, the address asked
// for only counts at creation and the load balancer keeps its VIP; ccm says so in a Warning
// (upstream is silent). A load balancer the Service does not own is another matter
// (adoptedAddress).
func vipNotApplied(spec *lbSpec, lb *loadbalancers.LoadBalancer, adopted bool) string {
	if spec.vipAddress == "" || adopted {
		return ""
	}
	if a, err := netip.ParseAddr(lb.VipAddress); err == nil && a.String() == spec.vipAddress {
		return ""
	}
	return fmt.Sprintf("spec.loadBalancerIP %s is not the VIP %s of load balancer %s: Octavia cannot change a VIP, so it is used only when the load balancer is created (recreate the Service to move it)",
		spec.vipAddress, lb.VipAddress, spec.name)
}
