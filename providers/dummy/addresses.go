package dummy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ippool"
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
)

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

// usable reports whether Service k may use address a: nobody else holds it, or every other
// holder shares k's sharing key and no port of theirs collides with k's.
func (l *loadBalancers) usable(a netip.Addr, k, sharingKey string, ports []string) bool {
	for _, other := range l.owner[a] {
		if other == k {
			continue
		}
		r, ok := l.records[other]
		if sharingKey == "" || !ok || r.SharingKey != sharingKey || slices.ContainsFunc(r.Ports, func(p string) bool { return slices.Contains(ports, p) }) {
			return false
		}
	}
	return true
}

// requestedIPs reads the addresses a Service asks for, by family (true = IPv6).
func requestedIPs(svc *v1.Service) (map[bool]netip.Addr, error) {
	out := map[bool]netip.Addr{}
	add := func(field, value string) error {
		for _, s := range strings.Split(value, ",") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			a, err := netip.ParseAddr(s)
			if err != nil {
				return fmt.Errorf("%s: %q is not an IP address", field, s)
			}
			if prev, dup := out[a.Is6()]; dup && prev != a {
				return fmt.Errorf("%s: asks for two addresses of one family (%s and %s)", field, prev, a)
			}
			out[a.Is6()] = a
		}
		return nil
	}
	if err := add("spec.loadBalancerIP", svc.Spec.LoadBalancerIP); err != nil {
		return nil, err
	}
	for _, ann := range []string{AnnotationLoadBalancerIPs, AnnotationKubeVIPLoadBalancerIPs} {
		if err := add("annotation "+ann, svc.Annotations[ann]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addressesFor picks the Service's addresses, one per IP family it asks for. It honours a
// requested address, keeps what the Service already has, shares where the Services opted in,
// and never hands one address to two Services that did not.
func (l *loadBalancers) addressesFor(svc *v1.Service, have Record) ([]netip.Addr, error) {
	k := key(svc)
	families := svc.Spec.IPFamilies
	if len(families) == 0 {
		families = []v1.IPFamily{v1.IPv4Protocol}
	}
	requested, err := requestedIPs(svc)
	if err != nil {
		return nil, err
	}
	pools := l.poolsFor(svc.Namespace)
	if len(pools) == 0 {
		return nil, fmt.Errorf("no address pool serves namespace %q: add a [Pool] with namespace = %s, or one without namespaces", svc.Namespace, svc.Namespace)
	}
	sharingKey, ports := svc.Annotations[AnnotationSharedIP], ippool.Ports(svc)
	ok := func(a netip.Addr, v6 bool) bool {
		return a.Is6() == v6 && slices.ContainsFunc(pools, func(p *ippool.Pool) bool { return p.Contains(a) }) && l.usable(a, k, sharingKey, ports)
	}
	var out []netip.Addr
	for i, fam := range families {
		v6 := fam == v1.IPv6Protocol
		var got netip.Addr
		if a, asked := requested[v6]; asked {
			if !ok(a, v6) {
				return nil, l.whyNot(a, svc, pools)
			}
			got = a
		}
		// Keep the current address; after a restart, re-adopt the one in the Service's status;
		// with a sharing key, join a Service that shares it.
		candidates := ippool.ParseAddrs(have.IPs)
		candidates = append(candidates, ippool.StatusAddrs(svc)...)
		if sharingKey != "" {
			for _, r := range l.records {
				if r.SharingKey == sharingKey {
					candidates = append(candidates, ippool.ParseAddrs(r.IPs)...)
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
			got, _ = p.Next(v6, func(a netip.Addr) bool { return len(l.owner[a]) > 0 })
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

// whyNot explains why a requested address cannot be used.
func (l *loadBalancers) whyNot(a netip.Addr, svc *v1.Service, pools []*ippool.Pool) error {
	if !slices.ContainsFunc(pools, func(p *ippool.Pool) bool { return p.Contains(a) }) {
		return fmt.Errorf("requested address %s is not in a pool that serves namespace %q", a, svc.Namespace)
	}
	hint := ""
	if svc.Annotations[AnnotationSharedIP] == "" {
		hint = fmt.Sprintf(" (to share it, give both Services the annotation %s with the same value and distinct ports)", AnnotationSharedIP)
	}
	return fmt.Errorf("requested address %s is already used by Service %s%s", a, strings.Join(l.owner[a], ", "), hint)
}

// PoolExhaustedError says no pool serving the Service has a free address of a family.
type PoolExhaustedError struct{ Namespace, Family string }

func (e *PoolExhaustedError) Error() string {
	return fmt.Sprintf("address pool exhausted: no free %s address in the pools serving namespace %q", e.Family, e.Namespace)
}

func (l *loadBalancers) poolsFor(namespace string) []*ippool.Pool {
	return ippool.For(l.pools, namespace)
}
