package poollb

import (
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ippool"
)

// Holders is which record keys hold each address: usually one, several when Services share
// it (or when two records claim it, which only a hand-made record or a race can cause).
type Holders map[netip.Addr][]string

// Claim adds key k to a's holders.
func (h Holders) Claim(a netip.Addr, k string) {
	if !slices.Contains(h[a], k) {
		h[a] = append(h[a], k)
	}
}

// Of lists the addresses k holds.
func (h Holders) Of(k string) []netip.Addr {
	var out []netip.Addr
	for a, ks := range h {
		if slices.Contains(ks, k) {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

// Release takes k off a's holders.
func (h Holders) Release(a netip.Addr, k string) {
	ks := h[a]
	if i := slices.Index(ks, k); i >= 0 {
		if ks = slices.Delete(ks, i, i+1); len(ks) == 0 {
			delete(h, a)
		} else {
			h[a] = ks
		}
	}
}

// ReleaseAll takes k off every address.
func (h Holders) ReleaseAll(k string) {
	for a := range h {
		h.Release(a, k)
	}
}

// Canonical is the one spelling of an address that comparisons use: IPv4-mapped IPv6 as IPv4,
// no zone. Addresses from records and statuses go through it, so a record or status written
// in another spelling still holds its address.
func Canonical(a netip.Addr) netip.Addr { return a.Unmap().WithZone("") }

// CanonicalAddrs parses recorded addresses in their canonical form, skipping any that do not
// parse.
func CanonicalAddrs(ips []string) []netip.Addr {
	out := ippool.ParseAddrs(ips)
	for i, a := range out {
		out[i] = Canonical(a)
	}
	return out
}

// StatusAddrs is the addresses of the Service's load balancer status, canonical.
func StatusAddrs(svc *v1.Service) []netip.Addr {
	out := ippool.StatusAddrs(svc)
	for i, a := range out {
		out[i] = Canonical(a)
	}
	return out
}

// Learn claims for each LoadBalancer Service of svcs (under the key the provider computes for
// it) the addresses of its status that nobody holds yet: a Service served by another ccm, or
// before the provider's records existed, never sees its address handed to another Service.
// It returns how many addresses it claimed.
func Learn(h Holders, svcs []v1.Service, key func(*v1.Service) string) int {
	n := 0
	for i := range svcs {
		svc := &svcs[i]
		if svc.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		for _, a := range StatusAddrs(svc) {
			if len(h[a]) == 0 {
				h.Claim(a, key(svc))
				n++
			}
		}
	}
	return n
}
