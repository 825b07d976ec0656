// Package poollb is the address decision of the providers that hand out load balancer
// addresses from [Pool] sections (dummy, vSphere without NSX): which addresses a Service gets,
// from the pools, what it asks for (spec.loadBalancerIP, annotations), who holds each address
// and which Services opted into sharing one. It is pure: each provider keeps its records in its
// own store and feeds this package what they hold (a View); the provider writes the result.
package poollb

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ippool"
	"github.com/ccm-project/ccm/common/reach"
)

// Names are the annotations a provider reads for its pools, each list in the order read; the
// first name of each list is the provider's own (it is the one messages suggest).
type Names struct {
	// LoadBalancerIPs ask for addresses, comma-separated, at most one per family.
	LoadBalancerIPs []string
	// SharedIP opt a Service into sharing an address with the Services of its cluster and
	// namespace that carry the same value, as long as their ports do not collide.
	SharedIP []string
	// AddressPool pick the pool, among those serving the Service's namespace.
	AddressPool []string
}

// ForProvider is the names a provider with annotation prefix (e.g. "dummy.ccm.io/") reads:
// its own, kube-vip's name for the requested addresses, and MetalLB's current and older names,
// accepted for migration with the same meaning and checks as the provider's own.
func ForProvider(prefix string) Names {
	return Names{
		LoadBalancerIPs: []string{prefix + "load-balancer-ips", KubeVIPAnnotation, "metallb.io/loadBalancerIPs", "metallb.universe.tf/loadBalancerIPs"},
		SharedIP:        []string{prefix + "allow-shared-ip", "metallb.io/allow-shared-ip", "metallb.universe.tf/allow-shared-ip"},
		AddressPool:     []string{prefix + "address-pool", "metallb.io/address-pool", "metallb.universe.tf/address-pool"},
	}
}

// MaxSharingKeyLen bounds the sharing key: it is stored in every sharing Service's record.
const MaxSharingKeyLen = 253

// Table is the reach of the names (common/reach): what a provider's annotation table lists for
// them, so that the hostile conformance suite tries each one.
func (n Names) Table() reach.Table {
	const addrCheck = "in a pool serving the Service's namespace and held by no other Service (unless both opt into sharing)"
	var t reach.Table
	for _, a := range n.LoadBalancerIPs {
		t = append(t, reach.Annotation{Name: a, Reach: reach.Object, Object: "address", List: true, Check: addrCheck})
	}
	for _, a := range n.AddressPool {
		t = append(t, reach.Annotation{Name: a, Reach: reach.Object, Object: "address pool", Check: "a pool serving the Service's namespace"})
	}
	for _, a := range n.SharedIP {
		t = append(t, reach.Annotation{Name: a, Reach: reach.Text, Max: MaxSharingKeyLen, Check: "scoped to the Service's cluster and namespace"})
	}
	return t
}

// PoolsFor narrows pools to those serving the Service's namespace, and to the one it names if
// it names one (named is true then). A pool that does not serve the namespace, or two names
// that differ, are refused with the annotation named.
func (n Names) PoolsFor(svc *v1.Service, all []*ippool.Pool) (out []*ippool.Pool, named bool, _ error) {
	pools := ippool.ForService(all, svc.Namespace, svc.Labels)
	if len(pools) == 0 {
		return nil, false, fmt.Errorf("no address pool serves namespace %q and the Service's labels: add a [Pool] with namespace = %s, or one without namespaces and service selectors", svc.Namespace, svc.Namespace)
	}
	name, from := "", ""
	for _, ann := range n.AddressPool {
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
		return nil, false, fmt.Errorf("annotation %s: no pool named %q serves namespace %q and the Service's labels", from, name, svc.Namespace)
	}
	return pools[i : i+1], true, nil
}

// ParseRequestedAddr reads one address a tenant asks for, strictly: one spelling per address,
// so that no other spelling of an address held by another Service (with a zone, IPv4-mapped,
// with leading zeros) can pass for a free one. IPv6 is accepted in any case and with or
// without leading zeros and comes back canonical (netip.Addr compares canonically).
func ParseRequestedAddr(field, s string) (netip.Addr, error) {
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

// Requested reads the addresses a Service asks for (spec.loadBalancerIP and the names), by
// family (true = IPv6), with the field or annotation that asked for each, so a refusal names
// what the tenant wrote.
func (n Names) Requested(svc *v1.Service) (map[bool]netip.Addr, map[netip.Addr]string, error) {
	out, from := map[bool]netip.Addr{}, map[netip.Addr]string{}
	add := func(field, value string) error {
		for _, s := range strings.Split(value, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			a, err := ParseRequestedAddr(field, s)
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
	for _, ann := range n.LoadBalancerIPs {
		if err := add("annotation "+ann, svc.Annotations[ann]); err != nil {
			return nil, nil, err
		}
	}
	return out, from, nil
}

// SharingKey reads the sharing key: "" for none. The key is printable text of at most
// MaxSharingKeyLen bytes; surrounding spaces do not count. Two of the names with different
// values are refused. It is scoped to the Service's cluster and namespace: Services of another
// namespace or cluster with the same value never share an address with it.
func (n Names) SharingKey(svc *v1.Service) (string, error) {
	key, from := "", ""
	for _, ann := range n.SharedIP {
		k := strings.TrimSpace(svc.Annotations[ann])
		switch {
		case k == "":
			continue
		case len(k) > MaxSharingKeyLen:
			return "", fmt.Errorf("annotation %s: the sharing key is %d bytes long, at most %d are allowed", ann, len(k), MaxSharingKeyLen)
		case !utf8.ValidString(k) || strings.ContainsFunc(k, func(r rune) bool { return !unicode.IsPrint(r) }):
			return "", fmt.Errorf("annotation %s: the sharing key must be printable text", ann)
		case key != "" && k != key:
			return "", fmt.Errorf("annotation %s: the sharing key %q differs from %q of annotation %s", ann, k, key, from)
		}
		key, from = k, ann
	}
	return key, nil
}
