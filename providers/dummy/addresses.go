package dummy

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/ownership"
)

// Annotations of the dummy provider.
const (
	// AnnotationLoadBalancerIPs asks for addresses, comma-separated, at most one per family.
	AnnotationLoadBalancerIPs = "dummy.ccm.io/load-balancer-ips"
	// AnnotationKubeVIPLoadBalancerIPs is kube-vip's name for the same, accepted for migration.
	AnnotationKubeVIPLoadBalancerIPs = "kube-vip.io/loadbalancerIPs"
	// AnnotationSharedIP opts a Service into sharing an address with the other Services that
	// carry the same value, as long as their ports and protocols do not collide.
	AnnotationSharedIP = "dummy.ccm.io/allow-shared-ip"
	// MetalLB's names for the requested addresses and the sharing key, current and older,
	// accepted for migration with the same meaning and checks as ccm's own.
	AnnotationMetalLBLoadBalancerIPs       = "metallb.io/loadBalancerIPs"
	AnnotationMetalLBLegacyLoadBalancerIPs = "metallb.universe.tf/loadBalancerIPs"
	AnnotationMetalLBSharedIP              = "metallb.io/allow-shared-ip"
	AnnotationMetalLBLegacySharedIP        = "metallb.universe.tf/allow-shared-ip"
	// AnnotationAddressPool picks the pool the Service's addresses come from, among those
	// serving its namespace; a pool with auto-assign = false hands out to a Service naming it.
	AnnotationAddressPool = "dummy.ccm.io/address-pool"
	// MetalLB's names for it.
	AnnotationMetalLBAddressPool       = "metallb.io/address-pool"
	AnnotationMetalLBLegacyAddressPool = "metallb.universe.tf/address-pool"
)

// requestedIPAnnotations and sharedIPAnnotations are each read alike, in this order.
var (
	requestedIPAnnotations = []string{AnnotationLoadBalancerIPs, AnnotationKubeVIPLoadBalancerIPs,
		AnnotationMetalLBLoadBalancerIPs, AnnotationMetalLBLegacyLoadBalancerIPs}
	sharedIPAnnotations    = []string{AnnotationSharedIP, AnnotationMetalLBSharedIP, AnnotationMetalLBLegacySharedIP}
	addressPoolAnnotations = []string{AnnotationAddressPool, AnnotationMetalLBAddressPool, AnnotationMetalLBLegacyAddressPool}
)

// namedPool narrows pools (those serving the Service's namespace) to the one the Service
// names, if it names one; named is true then. A pool that does not serve the namespace, or
// two names that differ, are refused with the annotation named.
func namedPool(svc *v1.Service, pools []*ippool.Pool) (out []*ippool.Pool, named bool, _ error) {
	name, from := "", ""
	for _, ann := range addressPoolAnnotations {
		v := strings.TrimSpace(svc.Annotations[ann])
		switch {
		case v == "":
			continue
		case name != "" && v != name:
			return nil, false, fmt.Errorf("annotation %s: pool %q differs from %q of annotation %s", ann, v, name, from)
		}
		name, from = v, ann
	}
	if name == "" {
		return pools, false, nil
	}
	i := slices.IndexFunc(pools, func(p *ippool.Pool) bool { return p.Name() == name })
	if i < 0 {
		return nil, false, fmt.Errorf("annotation %s: no pool named %q serves namespace %q", from, name, svc.Namespace)
	}
	return pools[i : i+1], true, nil
}

// holders is which Services use each address: usually one, several when they share it.
type holders map[netip.Addr][]string

func (h holders) claim(a netip.Addr, k string) {
	if !slices.Contains(h[a], k) {
		h[a] = append(h[a], k)
	}
}

// of lists the addresses k holds.
func (h holders) of(k string) []netip.Addr {
	var out []netip.Addr
	for a, ks := range h {
		if slices.Contains(ks, k) {
			out = append(out, a)
		}
	}
	return out
}

func (h holders) release(a netip.Addr, k string) {
	ks := h[a]
	if i := slices.Index(ks, k); i >= 0 {
		if ks = slices.Delete(ks, i, i+1); len(ks) == 0 {
			delete(h, a)
		} else {
			h[a] = ks
		}
	}
}

func (h holders) releaseAll(k string) {
	for a := range h {
		h.release(a, k)
	}
}

// usable reports whether the Service id (record key k) may use address a: nobody else holds it,
// or every other holder is a record of the same cluster and namespace with the same sharing
// key, and no port of theirs collides with the Service's. A record of another cluster or
// namespace, one made by hand (no ownership) and an address adopted from a Service's status
// are never shared.
func (l *loadBalancers) usable(a netip.Addr, k string, id ownership.Identity, sharingKey string, ports []string) bool {
	for _, other := range l.owner[a] {
		if other == k {
			continue
		}
		kr, ok := l.records.m[other]
		if !ok || sharingKey == "" || kr.SharingKey != sharingKey || !sameScope(id, kr.record(other)) ||
			slices.ContainsFunc(kr.Ports, func(p string) bool { return slices.Contains(ports, p) }) {
			return false
		}
	}
	return true
}

// sameScope reports whether r is a record ccm made for a Service of id's cluster and namespace:
// the only ones id may share an address with.
func sameScope(id ownership.Identity, r Record) bool {
	owner, ok := ownership.Owner(id.Cluster, r.Tags)
	return ok && owner.Namespace == id.Namespace
}

// canonical is the one spelling of an address that comparisons use: IPv4-mapped IPv6 as IPv4,
// no zone. Addresses from records and statuses go through it, so a record or status written
// in another spelling still holds its address.
func canonical(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// canonicalAddrs parses recorded or status addresses in their canonical form, skipping any that
// do not parse.
func canonicalAddrs(ips []string) []netip.Addr {
	out := ippool.ParseAddrs(ips)
	for i, a := range out {
		out[i] = canonical(a)
	}
	return out
}

// parseRequestedAddr reads one address a tenant asks for, strictly: one spelling per address,
// so that no other spelling of an address held by another Service (with a zone, IPv4-mapped,
// with leading zeros) can pass for a free one. IPv6 is accepted in any case and with or without
// leading zeros and comes back canonical (netip.Addr compares canonically).
func parseRequestedAddr(field, s string) (netip.Addr, error) {
	if strings.Contains(s, "%") {
		return netip.Addr{}, fmt.Errorf("%s: %q has a zone (%%...): zones are not allowed in a load balancer address", field, s)
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%s: %q is not an IP address (IPv4 is written without leading zeros, e.g. 192.0.2.10)", field, s)
	}
	if a.Is4In6() {
		return netip.Addr{}, fmt.Errorf("%s: %q is an IPv4-mapped IPv6 address: write the IPv4 address %s", field, s, a.Unmap())
	}
	return a, nil
}

// requested reads the addresses a Service asks for, by family (true = IPv6), with the field or
// annotation that asked for each, so a refusal names what the tenant wrote.
func requested(svc *v1.Service) (map[bool]netip.Addr, map[netip.Addr]string, error) {
	out, from := map[bool]netip.Addr{}, map[netip.Addr]string{}
	add := func(field, value string) error {
		for _, s := range strings.Split(value, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			a, err := parseRequestedAddr(field, s)
			if err != nil {
				return err
			}
			if prev, dup := out[a.Is6()]; dup && prev != a {
				return fmt.Errorf("%s: asks for two addresses of one family (%s and %s)", field, prev, a)
			}
			out[a.Is6()] = a
			if _, ok := from[a]; !ok {
				from[a] = field
			}
		}
		return nil
	}
	if err := add("spec.loadBalancerIP", svc.Spec.LoadBalancerIP); err != nil {
		return nil, nil, err
	}
	for _, ann := range requestedIPAnnotations {
		if err := add("annotation "+ann, svc.Annotations[ann]); err != nil {
			return nil, nil, err
		}
	}
	return out, from, nil
}

// maxSharingKeyLen bounds the sharing key: it is stored in every sharing Service's record.
const maxSharingKeyLen = 253

// sharingKey reads the sharing key (AnnotationSharedIP, or MetalLB's name for it): "" for
// none. The key is printable text of at most maxSharingKeyLen bytes; surrounding spaces do not
// count. Two of the names with different values are refused. It is scoped to the Service's
// cluster and namespace: Services of another namespace or cluster with the same value never
// share an address with it.
func sharingKey(svc *v1.Service) (string, error) {
	key, from := "", ""
	for _, ann := range sharedIPAnnotations {
		k := strings.TrimSpace(svc.Annotations[ann])
		switch {
		case k == "":
			continue
		case len(k) > maxSharingKeyLen:
			return "", fmt.Errorf("annotation %s: the sharing key is %d bytes long, at most %d are allowed", ann, len(k), maxSharingKeyLen)
		case !utf8.ValidString(k) || strings.ContainsFunc(k, func(r rune) bool { return !unicode.IsPrint(r) }):
			return "", fmt.Errorf("annotation %s: the sharing key must be printable text", ann)
		case key != "" && k != key:
			return "", fmt.Errorf("annotation %s: the sharing key %q differs from %q of annotation %s", ann, k, key, from)
		}
		key, from = k, ann
	}
	return key, nil
}

// addressesFor picks the Service's addresses, one per IP family it asks for. It honours a
// requested address, keeps what the Service already has, shares where the Services of one
// cluster and namespace opted in, and never hands one address to two Services that did not.
// have is the Service's own record (zero if it has none); k is its record key.
func (l *loadBalancers) addressesFor(svc *v1.Service, id ownership.Identity, k string, have Record) ([]netip.Addr, error) {
	families := svc.Spec.IPFamilies
	if len(families) == 0 {
		families = []v1.IPFamily{v1.IPv4Protocol}
	}
	asked, from, err := requested(svc)
	if err != nil {
		return nil, err
	}
	shareKey, err := sharingKey(svc)
	if err != nil {
		return nil, err
	}
	pools := l.poolsFor(svc.Namespace)
	if len(pools) == 0 {
		return nil, fmt.Errorf("no address pool serves namespace %q: add a [Pool] with namespace = %s, or one without namespaces", svc.Namespace, svc.Namespace)
	}
	pools, named, err := namedPool(svc, pools)
	if err != nil {
		return nil, err
	}
	ports := ippool.Ports(svc)
	ok := func(a netip.Addr, v6 bool) bool {
		return a.Is6() == v6 && slices.ContainsFunc(pools, func(p *ippool.Pool) bool { return p.Contains(a) }) && l.usable(a, k, id, shareKey, ports)
	}
	var out []netip.Addr
	for i, fam := range families {
		v6 := fam == v1.IPv6Protocol
		var got netip.Addr
		if a, isAsked := asked[v6]; isAsked {
			if !ok(a, v6) {
				return nil, fmt.Errorf("%s: %w", from[a], l.whyNot(a, svc, id, k, shareKey, pools))
			}
			got = a
		}
		// Keep the address in the Service's status (what its clients use: a record whose
		// address another writer changed gets it back), else the recorded one; with a sharing
		// key, join a Service of this cluster and namespace that shares it.
		candidates := canonicalStatusAddrs(svc)
		candidates = append(candidates, canonicalAddrs(have.IPs)...)
		if shareKey != "" {
			for k, kr := range l.records.m {
				if kr.SharingKey == shareKey && sameScope(id, kr.record(k)) {
					candidates = append(candidates, canonicalAddrs(kr.IPs)...)
				}
			}
		}
		for _, a := range candidates {
			if !got.IsValid() && ok(a, v6) {
				got = a
			}
		}
		for _, p := range pools {
			if got.IsValid() {
				break
			}
			free := func(a netip.Addr) bool { return len(l.owner[a]) > 0 }
			if named {
				got, _ = p.NextNamed(v6, free)
			} else {
				got, _ = p.Next(v6, free)
			}
		}
		if !got.IsValid() {
			if i > 0 && svc.Spec.IPFamilyPolicy != nil && *svc.Spec.IPFamilyPolicy == v1.IPFamilyPolicyPreferDualStack {
				continue // the second family is a wish, not a must
			}
			return nil, &PoolExhaustedError{Namespace: svc.Namespace, Family: string(fam)}
		}
		out = append(out, got)
	}
	return out, nil
}

// canonicalStatusAddrs is ippool.StatusAddrs in canonical form.
func canonicalStatusAddrs(svc *v1.Service) []netip.Addr {
	out := ippool.StatusAddrs(svc)
	for i, a := range out {
		out[i] = canonical(a)
	}
	return out
}

// whyNot explains why a requested address cannot be used. The text becomes a Warning Event of
// the Service: it names the Services holding the address only when they are all of the same
// cluster and namespace (which the tenant can see anyway), never one of another namespace or
// cluster, nor a record made outside ccm.
func (l *loadBalancers) whyNot(a netip.Addr, svc *v1.Service, id ownership.Identity, k, shareKey string, pools []*ippool.Pool) error {
	if !slices.ContainsFunc(pools, func(p *ippool.Pool) bool { return p.Contains(a) }) {
		return fmt.Errorf("requested address %s is not in a pool that serves namespace %q", a, svc.Namespace)
	}
	var visible []string // holders of the same cluster and namespace, as namespace/name
	foreign := false
	for _, other := range l.owner[a] {
		if other == k {
			continue
		}
		if n, ok := l.holderInScope(id, other); ok {
			visible = append(visible, n)
		} else {
			foreign = true
		}
	}
	if foreign {
		hint := ""
		if shareKey != "" {
			hint = fmt.Sprintf(" (addresses are shared only among Services of one namespace and cluster with the same %s)", AnnotationSharedIP)
		}
		return fmt.Errorf("requested address %s is already in use by another Service%s", a, hint)
	}
	hint := ""
	if shareKey == "" {
		hint = fmt.Sprintf(" (to share it, give both Services the annotation %s with the same value and distinct ports)", AnnotationSharedIP)
	}
	sort.Strings(visible)
	return fmt.Errorf("requested address %s is already in use by Service %s%s", a, strings.Join(visible, ", "), hint)
}

// holderInScope returns the namespace/name of the Service holding an address under record key
// other, if that Service is of id's cluster and namespace: a record ccm wrote for it, or an
// address adopted from its status under the name ccm computes for it.
func (l *loadBalancers) holderInScope(id ownership.Identity, other string) (string, bool) {
	if r, ok := l.records.get(other); ok {
		owner, ok := ownership.Owner(id.Cluster, r.Tags)
		return owner.Service(), ok && owner.Namespace == id.Namespace && r.Name == other
	}
	ns, name, ok := names.Parse(id.Cluster, other)
	return ns + "/" + name, ok && ns == id.Namespace
}

// PoolExhaustedError says no pool serving the Service has a free address of a family.
type PoolExhaustedError struct{ Namespace, Family string }

func (e *PoolExhaustedError) Error() string {
	return fmt.Sprintf("address pool exhausted: no free %s address in the pools serving namespace %q", e.Family, e.Namespace)
}

func (l *loadBalancers) poolsFor(namespace string) []*ippool.Pool {
	return ippool.For(l.pools, namespace)
}
