// Package ippool is the load balancer address pool shared by the providers that hand out
// bare-metal-style virtual IPs (dummy, vSphere without NSX): CIDRs and ranges of one or both
// families, reserved addresses, namespaces served, and first-free allocation.
package ippool

import (
	"fmt"
	"math/big"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Pool is a set of load balancer addresses: CIDRs and ranges of one or both families, minus
// reserved addresses. For IPv4 CIDRs wider than /31 the network and broadcast addresses are
// left out, as routers would not deliver to them, unless skip-end-addresses is false (what
// kube-vip-cloud-provider and MetalLB hand out by default, kept by a pool moved from them).
type Pool struct {
	name       string
	namespaces []string
	ranges     []ipRange
	reserved   map[netip.Addr]bool
	// descending hands out the highest free address first (kube-vip's search-order desc).
	descending bool
	// manual pools hand out only the addresses Services ask for (MetalLB's autoAssign false).
	manual bool
	// avoidBuggy leaves out IPv4 addresses ending in .0 or .255, which some clients treat as
	// network or broadcast addresses (MetalLB's avoidBuggyIPs; kube-vip-cloud-provider always).
	avoidBuggy bool
	// selectors narrow the Services served to those whose labels match one (select.go).
	selectors []labels.Selector
	// priority orders the pools a Service may use: lower first, 0 (none) last.
	priority int
}

type ipRange struct{ first, last netip.Addr }

// Config is how a pool is written in a cloud-config ([Pool "name"] sections).
type Config struct {
	CIDR      []string // e.g. 192.0.2.0/28 or 2001:db8::/120
	Range     []string // e.g. 192.0.2.10-192.0.2.20
	Namespace []string // namespaces served; a pool without namespaces serves all others
	Reserved  []string // addresses never handed out
	// SkipEndAddresses (default true): an IPv4 cidr line wider than /31 leaves out its first
	// and last address.
	SkipEndAddresses *bool `gcfg:"skip-end-addresses"`
	// Order is ascending (the default: the lowest free address first) or descending.
	Order string `gcfg:"order"`
	// AutoAssign (default true): false hands out only addresses a Service asks for.
	AutoAssign *bool `gcfg:"auto-assign"`
	// AvoidBuggyIPs leaves out IPv4 addresses ending in .0 or .255.
	AvoidBuggyIPs bool `gcfg:"avoid-buggy-ips"`
	// ServiceSelector lines are label selectors in Kubernetes' syntax (app=web,tier in (a,b)):
	// a pool with any serves only the Services whose labels match one of them.
	ServiceSelector []string `gcfg:"service-selector"`
	// Priority orders the pools a Service may use: the lowest first; 0 (unset) after the rest.
	Priority int `gcfg:"priority"`
}

// Error names the config key of a pool that is wrong and why.
type Error struct{ Key, Msg string }

func (e *Error) Error() string { return e.Key + ": " + e.Msg }

// New parses a pool's config.
func New(name string, c *Config) (*Pool, *Error) {
	p := &Pool{name: name, namespaces: c.Namespace, reserved: map[netip.Addr]bool{},
		manual: c.AutoAssign != nil && !*c.AutoAssign, avoidBuggy: c.AvoidBuggyIPs, priority: c.Priority}
	if c.Priority < 0 {
		return nil, &Error{"priority", fmt.Sprintf("%d is negative: 1 is the first, 0 (unset) the last", c.Priority)}
	}
	var err *Error
	if p.selectors, err = parseSelectors(c.ServiceSelector); err != nil {
		return nil, err
	}
	switch strings.ToLower(strings.TrimSpace(c.Order)) {
	case "", "ascending":
	case "descending":
		p.descending = true
	default:
		return nil, &Error{"order", fmt.Sprintf("%q is neither ascending nor descending", c.Order)}
	}
	skipEnds := c.SkipEndAddresses == nil || *c.SkipEndAddresses
	for _, s := range c.CIDR {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, &Error{"cidr", fmt.Sprintf("%q is not a CIDR such as 192.0.2.0/28", s)}
		}
		pfx = pfx.Masked()
		first, last := pfx.Addr(), lastAddr(pfx)
		if skipEnds && first.Is4() && pfx.Bits() < 31 {
			first, last = first.Next(), last.Prev()
		}
		p.ranges = append(p.ranges, ipRange{first, last})
	}
	for _, s := range c.Range {
		a, b, ok := strings.Cut(s, "-")
		first, err1 := netip.ParseAddr(strings.TrimSpace(a))
		last, err2 := netip.ParseAddr(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil || first.Is4() != last.Is4() || last.Less(first) {
			return nil, &Error{"range", fmt.Sprintf("%q is not a range such as 192.0.2.10-192.0.2.20 (same family, first <= last)", s)}
		}
		p.ranges = append(p.ranges, ipRange{first, last})
	}
	for _, s := range c.Reserved {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return nil, &Error{"reserved", fmt.Sprintf("%q is not an IP address", s)}
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

// Name is the pool's name.
func (p *Pool) Name() string { return p.name }

// Namespaces lists the namespaces the pool is reserved to.
func (p *Pool) Namespaces() []string { return p.namespaces }

// Contains reports whether a can be handed out by the pool (asked for, or by Next).
func (p *Pool) Contains(a netip.Addr) bool {
	return p.allowed(a) && p.inRanges(a)
}

// AutoAssign reports whether Next hands out addresses: false for a pool of addresses that
// are only ever asked for.
func (p *Pool) AutoAssign() bool { return !p.manual }

// allowed: a is neither reserved nor left out as buggy.
func (p *Pool) allowed(a netip.Addr) bool {
	return !p.reserved[a] && !(p.avoidBuggy && buggy(a))
}

// buggy: an IPv4 address ending in .0 or .255.
func buggy(a netip.Addr) bool {
	if !a.Is4() {
		return false
	}
	last := a.As4()[3]
	return last == 0 || last == 255
}

func (p *Pool) inRanges(a netip.Addr) bool {
	for _, r := range p.ranges {
		if !a.Less(r.first) && !r.last.Less(a) {
			return true
		}
	}
	return false
}

// Next returns the first free address of family v6 in the pool's order (the lowest, or with
// order descending the highest), one used does not hold; none from a pool with auto-assign
// false. It scans at most len(used)+len(reserved)+1 addresses per range (plus the .0 and .255
// ones it skips), so a huge IPv6 range is no cost.
func (p *Pool) Next(v6 bool, used func(netip.Addr) bool) (netip.Addr, bool) {
	if p.manual {
		return netip.Addr{}, false
	}
	return p.NextNamed(v6, used)
}

// NextNamed is Next for a Service that names the pool: a pool with auto-assign false hands
// out to it too.
func (p *Pool) NextNamed(v6 bool, used func(netip.Addr) bool) (netip.Addr, bool) {
	for i := range p.ranges {
		r := p.ranges[i]
		start, step, done := r.first, netip.Addr.Next, func(a netip.Addr) bool { return r.last.Less(a) }
		if p.descending {
			r = p.ranges[len(p.ranges)-1-i]
			start, step, done = r.last, netip.Addr.Prev, func(a netip.Addr) bool { return a.Less(r.first) }
		}
		if r.first.Is6() != v6 {
			continue
		}
		for a := start; a.IsValid() && !done(a); a = step(a) {
			if p.allowed(a) && !used(a) {
				return a, true
			}
		}
	}
	return netip.Addr{}, false
}

// Size is the number of addresses the pool can hand out (capped for metrics on huge ranges).
func (p *Pool) Size() float64 {
	total := new(big.Int)
	for _, r := range p.ranges {
		n := new(big.Int).Sub(new(big.Int).SetBytes(r.last.AsSlice()), new(big.Int).SetBytes(r.first.AsSlice()))
		total.Add(total, n.Add(n, big.NewInt(1)))
	}
	for a := range p.reserved {
		if p.inRanges(a) && !(p.avoidBuggy && buggy(a)) {
			total.Sub(total, big.NewInt(1))
		}
	}
	if p.avoidBuggy {
		for _, r := range p.ranges {
			total.Sub(total, big.NewInt(buggyIn(r)))
		}
	}
	f, _ := new(big.Float).SetInt(total).Float64()
	return f
}

// buggyIn counts the IPv4 addresses of r ending in .0 or .255.
func buggyIn(r ipRange) int64 {
	if !r.first.Is4() {
		return 0
	}
	f, l := u64(r.first), u64(r.last)
	// the multiples of 256 in [f, l], and the numbers one below them (x+1 a multiple)
	count := func(f, l uint64) int64 { return int64(l/256 - (f+255)/256 + 1) }
	return count(f, l) + count(f+1, l+1)
}

func u64(a netip.Addr) uint64 {
	b := a.As4()
	return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
}

// All parses a cloud config's pools ([Pool "name"] sections), in name order; the error names
// the pool and key.
func All(cfg map[string]*Config) ([]*Pool, error) {
	names := make([]string, 0, len(cfg))
	for n := range cfg {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*Pool, 0, len(names))
	for _, n := range names {
		p, err := New(n, cfg[n])
		if err != nil {
			return nil, fmt.Errorf("[Pool %q] %s", n, err.Error())
		}
		out = append(out, p)
	}
	return out, nil
}
