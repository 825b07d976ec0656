package openstack

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	"github.com/ccm-project/ccm/common/routes"
)

// A route ccm makes on a shared router is recorded as its cluster's by one tag on the router,
// added before the route and removed after it. Neutron routes carry no description or tags
// of their own, and a route's Node (whose address would say whose it is) may be gone when
// the route must be deleted. A tag cannot hold '/' (Neutron answers 404 to the tag URL), so
// the prefix length follows '_'; cluster names are [A-Za-z0-9._-] (ownership.CheckClusterName).
const routeRecordPrefix = "ccm-route."

// routeRecord is r's record tag for cluster.
func routeRecord(cluster string, r routes.Route) string {
	dest := r.Destination.Addr().String() + "_" + strconv.Itoa(r.Destination.Bits())
	return routeRecordPrefix + cluster + "." + dest + ".via." + r.Hop
}

// heldRoutes are the router's routes that parse; a route Neutron would not have accepted (a
// hop that is no address) is skipped, as no Node can be behind it.
func heldRoutes(rs []routers.Route) []routes.Route {
	var out []routes.Route
	for _, r := range rs {
		p, err1 := netip.ParsePrefix(r.DestinationCIDR)
		a, err2 := netip.ParseAddr(r.NextHop)
		if err1 == nil && err2 == nil {
			out = append(out, routes.Route{Destination: p.Masked(), Hop: a.Unmap().String()})
		}
	}
	return out
}

// recordedIn reports which routes tags record as cluster's.
func recordedIn(cluster string, tags []string) func(routes.Route) bool {
	set := map[string]bool{}
	for _, t := range tags {
		if strings.HasPrefix(t, routeRecordPrefix) {
			set[t] = true
		}
	}
	return func(r routes.Route) bool { return set[routeRecord(cluster, r)] }
}

// pairsWith is port's allowed address pairs with dest allowed (the Node forwards the Pod
// CIDR's traffic, which port security would drop); changed is false when it already is.
func pairsWith(p ports.Port, dest netip.Prefix) (pairs []ports.AddressPair, changed bool) {
	if slices.ContainsFunc(p.AllowedAddressPairs, func(a ports.AddressPair) bool { return samePrefix(a.IPAddress, dest) }) {
		return p.AllowedAddressPairs, false
	}
	return append(slices.Clone(p.AllowedAddressPairs), ports.AddressPair{IPAddress: dest.String()}), true
}

// pairsWithout is port's allowed address pairs without dest.
func pairsWithout(p ports.Port, dest netip.Prefix) (pairs []ports.AddressPair, changed bool) {
	out := slices.DeleteFunc(slices.Clone(p.AllowedAddressPairs), func(a ports.AddressPair) bool { return samePrefix(a.IPAddress, dest) })
	return out, len(out) != len(p.AllowedAddressPairs)
}

func samePrefix(s string, p netip.Prefix) bool {
	q, err := netip.ParsePrefix(s)
	return err == nil && q.Masked() == p
}
