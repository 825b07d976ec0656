package reach

import (
	"net/netip"
	"slices"
	"strings"

	netutils "k8s.io/utils/net"
)

// MaxRanges bounds the client ranges of one Service: each becomes a rule or an allowed CIDR
// in a shared cloud quota, and no parser should see an unbounded list.
const MaxRanges = 250

// Prefix reads one client range and returns it canonical: masked, an IPv4-mapped IPv6 range
// as the IPv4 range it is (::ffff:10.0.0.0/104 is 10.0.0.0/8, ::ffff:0.0.0.0/96 is every IPv4
// client), so every later decision (family, "admits everyone", rule keys) sees one form. A
// zone (fe80::/64%eth0) is refused: a load balancer has no interface to scope it to. Leading
// zeros in IPv4 are read as upstream reads them (k8s.io/utils/net's sloppy parser).
func Prefix(s string) (netip.Prefix, bool) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "%") {
		return netip.Prefix{}, false
	}
	_, n, err := netutils.ParseCIDRSloppy(s)
	if err != nil {
		return netip.Prefix{}, false
	}
	addr, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	if addr.Is4In6() || (addr.Is4() && bits > 32) {
		addr = addr.Unmap()
		if bits -= 96; bits < 0 {
			return netip.Prefix{}, false // wider than the mapped space: not one family's range
		}
	}
	return netip.PrefixFrom(addr, bits).Masked(), true
}

// PrefixList reads a list of ranges that annotation (or a spec field) names: canonical,
// sorted, without duplicates, at most MaxRanges. The refusal names the item.
func PrefixList(annotation string, items []string) ([]string, error) {
	if len(items) > MaxRanges {
		return nil, Refuse(annotation, "%d ranges, more than the %d a Service may list", len(items), MaxRanges)
	}
	out := make([]string, 0, len(items))
	for i, item := range items {
		p, ok := Prefix(item)
		if !ok {
			return nil, Refuse(annotation, "item %d, %q, is not a CIDR (e.g. 203.0.113.0/24 or 2001:db8::/32; no zone)", i+1, item)
		}
		out = append(out, p.String())
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
