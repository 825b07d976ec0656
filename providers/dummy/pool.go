package dummy

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"
)

// pool is a set of load balancer addresses: CIDRs and ranges of one or both families, minus
// reserved addresses. For IPv4 CIDRs wider than /31 the network and broadcast addresses are
// left out, as routers would not deliver to them.
type pool struct {
	name       string
	namespaces []string
	ranges     []ipRange
	reserved   map[netip.Addr]bool
}

type ipRange struct{ first, last netip.Addr }

type poolErr struct{ key, msg string }

func newPool(name string, c *PoolConfig) (*pool, *poolErr) {
	p := &pool{name: name, namespaces: c.Namespace, reserved: map[netip.Addr]bool{}}
	for _, s := range c.CIDR {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, &poolErr{"cidr", fmt.Sprintf("%q is not a CIDR such as 192.0.2.0/28", s)}
		}
		pfx = pfx.Masked()
		first, last := pfx.Addr(), lastAddr(pfx)
		if first.Is4() && pfx.Bits() < 31 {
			first, last = first.Next(), last.Prev()
		}
		p.ranges = append(p.ranges, ipRange{first, last})
	}
	for _, s := range c.Range {
		a, b, ok := strings.Cut(s, "-")
		first, err1 := netip.ParseAddr(strings.TrimSpace(a))
		last, err2 := netip.ParseAddr(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil || first.Is4() != last.Is4() || last.Less(first) {
			return nil, &poolErr{"range", fmt.Sprintf("%q is not a range such as 192.0.2.10-192.0.2.20 (same family, first <= last)", s)}
		}
		p.ranges = append(p.ranges, ipRange{first, last})
	}
	for _, s := range c.Reserved {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return nil, &poolErr{"reserved", fmt.Sprintf("%q is not an IP address", s)}
		}
		p.reserved[a] = true
	}
	return p, nil
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// serves reports whether the pool hands out addresses to Services in namespace: a pool that
// names namespaces serves only those; one that names none is the fallback for the rest.
func (p *pool) serves(namespace string, anyNamed bool) bool {
	if len(p.namespaces) > 0 {
		return slices.Contains(p.namespaces, namespace)
	}
	return !anyNamed
}

func (p *pool) contains(a netip.Addr) bool {
	return !p.reserved[a] && p.inRanges(a)
}

func (p *pool) inRanges(a netip.Addr) bool {
	for _, r := range p.ranges {
		if !a.Less(r.first) && !r.last.Less(a) {
			return true
		}
	}
	return false
}

// next returns the first address of family v6 that used does not hold. It scans at most
// len(used)+len(reserved)+1 addresses per range, so a huge IPv6 range is no cost.
func (p *pool) next(v6 bool, used func(netip.Addr) bool) (netip.Addr, bool) {
	for _, r := range p.ranges {
		if r.first.Is6() != v6 {
			continue
		}
		for a := r.first; a.IsValid() && !r.last.Less(a); a = a.Next() {
			if !p.reserved[a] && !used(a) {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

// size is the number of addresses the pool can hand out (capped for metrics on huge ranges).
func (p *pool) size() float64 {
	total := new(big.Int)
	for _, r := range p.ranges {
		n := new(big.Int).Sub(new(big.Int).SetBytes(r.last.AsSlice()), new(big.Int).SetBytes(r.first.AsSlice()))
		total.Add(total, n.Add(n, big.NewInt(1)))
	}
	for a := range p.reserved {
		if p.inRanges(a) {
			total.Sub(total, big.NewInt(1))
		}
	}
	f, _ := new(big.Float).SetInt(total).Float64()
	return f
}
