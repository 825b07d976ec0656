package poollb

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ippool"
)

// Holder is what a provider knows of a record key that holds an address, as seen by the
// Service asking for one.
type Holder struct {
	// Record: the provider holds a record under the key. False: the key holds addresses
	// learned from a Service's status (Learn), which are never shared.
	Record bool
	// InScope: the key is a Service's that ccm made the record for (or learned the address
	// from), of the asking Service's cluster and namespace; Service is its namespace/name
	// then. Only such a holder shares an address with the asking Service or is named in a
	// refusal: a record of another cluster or namespace, or one made by hand, never is.
	InScope bool
	Service string
	// SharingKey and Ports are the record's: it shares with a Service of the same scope and
	// key whose ports do not collide with these.
	SharingKey string
	Ports      []string
	// Backends are the record's (kept with a sharing key): whose traffic it serves.
	Backends Backends
}

// View is what a provider holds when a Service's addresses are picked.
type View struct {
	Names Names
	Pools []*ippool.Pool // every configured pool, in the config's order
	Held  Holders
	// Holder describes record key k for the asking Service (its cluster and namespace).
	Holder func(k string) Holder
}

// Request is the Service asking, with what it holds already.
type Request struct {
	Service *v1.Service
	Key     string       // the Service's record key
	Own     []netip.Addr // the addresses of the Service's own record (canonical); nil for none
}

// Choice is the outcome: the addresses, one per family served, and what the Service's Events
// should say about them.
type Choice struct {
	Addrs      []netip.Addr
	SharingKey string
	// Moved says, for each address of the Service's status that it does not keep, why (the
	// Service's clients lose it: a Warning is due).
	Moved []string
	// Outside lists addresses the Service keeps though no pool serving its namespace holds
	// them any more (the pools changed): handed-out addresses never move, but the operator is
	// told, with a Warning.
	Outside []netip.Addr
}

// ExhaustedError says no pool serving the Service has a free address of a family.
type ExhaustedError struct{ Namespace, Family string }

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("address pool exhausted: no free %s address in the pools serving namespace %q", e.Family, e.Namespace)
}

// request is one Choose call's reading of the Service.
type request struct {
	Request
	asked    map[bool]netip.Addr
	from     map[netip.Addr]string
	shareKey string
	ports    []string
	backends Backends
	pools    []*ippool.Pool // those the Service may get an address from
	named    bool           // it named its pool
}

// Choose picks the Service's addresses, one per IP family it asks for. In order of preference:
// the address it asks for; the one in its status (what its clients use: a record another writer
// changed gets it back); the one its record holds; with a sharing key, one a Service of its
// cluster and namespace with the same key holds; the first free one of its pools. An address it
// already holds stays its own though the pools changed (unless it asks for another, or names a
// pool); an address is never handed to two Services that did not both opt into sharing it.
func (v View) Choose(in Request) (Choice, error) {
	r, err := v.read(in)
	if err != nil {
		return Choice{}, err
	}
	families := in.Service.Spec.IPFamilies
	if len(families) == 0 {
		families = []v1.IPFamily{v1.IPv4Protocol}
	}
	c := Choice{SharingKey: r.shareKey}
	for i, fam := range families {
		got, err := v.family(r, fam == v1.IPv6Protocol, &c)
		if err != nil {
			return Choice{}, err
		}
		if !got.IsValid() {
			if i > 0 && in.Service.Spec.IPFamilyPolicy != nil && *in.Service.Spec.IPFamilyPolicy == v1.IPFamilyPolicyPreferDualStack {
				continue // the second family is a wish, not a must
			}
			return Choice{}, &ExhaustedError{Namespace: in.Service.Namespace, Family: string(fam)}
		}
		c.Addrs = append(c.Addrs, got)
	}
	return c, nil
}

// read checks what the Service asks for: requested addresses, sharing key, pool.
func (v View) read(in Request) (request, error) {
	r := request{Request: in, ports: ippool.Ports(in.Service), backends: BackendsOf(in.Service)}
	var err error
	if r.asked, r.from, err = v.Names.Requested(in.Service); err != nil {
		return r, err
	}
	if r.shareKey, err = v.Names.SharingKey(in.Service); err != nil {
		return r, err
	}
	r.pools, r.named, err = v.Names.PoolsFor(in.Service, v.Pools)
	return r, err
}

// family picks the address of one family (none if there is no free one), noting in c what the
// Service's Events should say.
func (v View) family(r request, v6 bool, c *Choice) (netip.Addr, error) {
	var got netip.Addr
	a, isAsked := r.asked[v6]
	if isAsked {
		if !v.fits(r, a) || !v.usable(r, a) {
			return got, fmt.Errorf("%s: %w", r.from[a], v.whyNot(r, a))
		}
		got = a
	}
	candidates := append(StatusAddrs(r.Service), r.Own...)
	candidates = append(candidates, v.peers(r)...)
	for _, a := range candidates {
		if !got.IsValid() && a.Is6() == v6 && v.fits(r, a) && v.usable(r, a) {
			got = a
		}
	}
	for _, p := range r.pools {
		if got.IsValid() {
			break
		}
		taken := func(a netip.Addr) bool { return len(v.Held[a]) > 0 }
		if r.named {
			got, _ = p.NextNamed(v6, taken)
		} else {
			got, _ = p.Next(v6, taken)
		}
	}
	if got.IsValid() && !r.inPools(got) {
		c.Outside = append(c.Outside, got)
	}
	if !isAsked {
		c.Moved = append(c.Moved, v.moved(r, v6, got)...)
	}
	return got, nil
}

// inPools: a pool the Service may get an address from holds a.
func (r request) inPools(a netip.Addr) bool {
	return slices.ContainsFunc(r.pools, func(p *ippool.Pool) bool { return p.Contains(a) })
}

// fits: a is in the Service's pools, or its own record holds it and it named no pool (the
// pools changed under it: it keeps the address).
func (v View) fits(r request, a netip.Addr) bool {
	return r.inPools(a) || !r.named && slices.Contains(r.Own, a)
}

// usable reports whether the Service may use a: nobody else holds it, or every other holder
// is a record of the same cluster and namespace with the same sharing key and no port of its
// collides with the Service's. A record of another cluster or namespace, one made by hand
// and an address learned from a Service's status are never shared. An address the Service's
// own record holds stays its own against a holder that did not opt into sharing with it (a
// duplicate made by hand or by a race must not move a live address).
func (v View) usable(r request, a netip.Addr) bool {
	own := slices.Contains(r.Own, a)
	for _, other := range v.Held[a] {
		if other == r.Key {
			continue
		}
		h := v.Holder(other)
		sharer := h.Record && h.InScope && h.SharingKey != ""
		if own && !sharer {
			continue
		}
		if !sharer || h.SharingKey != r.shareKey || !compatible(h.Backends, r.backends) ||
			slices.ContainsFunc(h.Ports, func(p string) bool { return slices.Contains(r.ports, p) }) {
			return false
		}
	}
	return true
}

// peers are the addresses that records of the Service's cluster and namespace with its sharing
// key hold, sorted.
func (v View) peers(r request) []netip.Addr {
	if r.shareKey == "" {
		return nil
	}
	var out []netip.Addr
	for a, ks := range v.Held {
		if slices.ContainsFunc(ks, func(k string) bool {
			h := v.Holder(k)
			return k != r.Key && h.Record && h.InScope && h.SharingKey == r.shareKey && compatible(h.Backends, r.backends)
		}) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// moved says why each address of family v6 in the Service's status is not kept (got is).
func (v View) moved(r request, v6 bool, got netip.Addr) []string {
	var out []string
	for _, a := range StatusAddrs(r.Service) {
		switch {
		case a.Is6() != v6 || a == got:
		case !v.fits(r, a):
			out = append(out, fmt.Sprintf("%s is in no pool serving namespace %q", a, r.Service.Namespace))
		case !v.usable(r, a):
			out = append(out, fmt.Sprintf("%s is held by another load balancer record", a))
		}
	}
	return out
}

// whyNot explains why a requested address cannot be used. The text becomes a Warning Event of
// the Service: it names the Services holding the address only when they are all of the same
// cluster and namespace (which the tenant can see anyway), never one of another namespace or
// cluster, nor a record made outside ccm.
func (v View) whyNot(r request, a netip.Addr) error {
	if !v.fits(r, a) {
		return fmt.Errorf("requested address %s is not in a pool that serves namespace %q", a, r.Service.Namespace)
	}
	var visible []string
	foreign := false
	for _, other := range v.Held[a] {
		if other == r.Key {
			continue
		}
		if h := v.Holder(other); h.InScope {
			visible = append(visible, h.Service)
		} else {
			foreign = true
		}
	}
	own := v.Names.SharedIP[0]
	if foreign {
		hint := ""
		if r.shareKey != "" {
			hint = fmt.Sprintf(" (addresses are shared only among Services of one namespace and cluster with the same %s)", own)
		}
		return fmt.Errorf("requested address %s is already in use by another Service%s", a, hint)
	}
	hint := ""
	if r.shareKey == "" {
		hint = fmt.Sprintf(" (to share it, give both Services the annotation %s with the same value and distinct ports)", own)
	}
	sort.Strings(visible)
	return fmt.Errorf("requested address %s is already in use by Service %s%s", a, strings.Join(visible, ", "), hint)
}
