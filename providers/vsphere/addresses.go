package vsphere

import (
	"net/netip"
	"slices"

	"github.com/vmware/govmomi/vim25/types"
	v1 "k8s.io/api/core/v1"
)

// addressRules is [Nodes]: which guest NIC addresses are a Node's internal and external ones.
type addressRules struct {
	internalCIDRs, externalCIDRs []netip.Prefix
	internalNet, externalNet     string
	excludeInternal              []netip.Prefix
	excludeExternal              []netip.Prefix
}

func newAddressRules(c *Config) addressRules {
	n := c.Nodes
	must := func(s string) []netip.Prefix { p, _ := cidrs(s); return p } // validated by the factory
	return addressRules{
		internalCIDRs: must(n.InternalNetworkSubnetCIDR), externalCIDRs: must(n.ExternalNetworkSubnetCIDR),
		internalNet: n.InternalVMNetworkName, externalNet: n.ExternalVMNetworkName,
		excludeInternal: must(n.ExcludeInternalNetworkSubnetCIDR), excludeExternal: must(n.ExcludeExternalNetworkSubnetCIDR),
	}
}

// external reports whether any rule asks for external addresses.
func (r addressRules) external() bool { return len(r.externalCIDRs) > 0 || r.externalNet != "" }

// nodeAddresses picks, for each IP family in families' order, one InternalIP and (when
// [Nodes] asks for them) one ExternalIP from the VM's guest NICs (VMware Tools), then the
// hostname. Candidates are taken NIC by NIC in the guest's order; an address qualifies when
// its NIC is on the named VM network (if one is set), it is inside the subnets (if set) and
// outside the excluded subnets. Loopback, link-local and unspecified addresses never qualify.
// With no internal rule, the first qualifying address of the family is internal. When the
// rules find neither an internal nor an external address of a family (no [Nodes] rules at
// all, or rules that match nothing), the first address outside the internal exclusions is the
// InternalIP and the first outside the external exclusions the ExternalIP, as the upstream
// CCM does, so a Node keeps the same addresses when a cluster moves between the two.
func (r addressRules) nodeAddresses(nics []types.GuestNicInfo, families []string, hostname string) []v1.NodeAddress {
	// pick returns the first qualifying address of the family, or nil.
	pick := func(t v1.NodeAddressType, v6 bool, network string, in, ex []netip.Prefix) *v1.NodeAddress {
		for _, nic := range nics {
			if network != "" && nic.Network != network {
				continue
			}
			for _, s := range nic.IpAddress {
				a, err := netip.ParseAddr(s)
				if err != nil || a.Is6() != v6 || a.Is4In6() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified() {
					continue
				}
				if len(in) > 0 && !containsAddr(in, a) || containsAddr(ex, a) {
					continue
				}
				return &v1.NodeAddress{Type: t, Address: a.String()}
			}
		}
		return nil
	}
	internalRule := len(r.internalCIDRs) > 0 || r.internalNet != ""
	internal := make([]*v1.NodeAddress, len(families))
	external := make([]*v1.NodeAddress, len(families))
	for i, f := range families {
		v6 := f == "ipv6"
		if internalRule {
			internal[i] = pick(v1.NodeInternalIP, v6, r.internalNet, r.internalCIDRs, r.excludeInternal)
		}
		if r.external() {
			external[i] = pick(v1.NodeExternalIP, v6, r.externalNet, r.externalCIDRs, r.excludeExternal)
		}
		switch {
		case internal[i] == nil && external[i] == nil:
			internal[i] = pick(v1.NodeInternalIP, v6, "", nil, r.excludeInternal)
			external[i] = pick(v1.NodeExternalIP, v6, "", nil, r.excludeExternal)
		case internal[i] == nil && !internalRule:
			internal[i] = pick(v1.NodeInternalIP, v6, "", nil, r.excludeInternal)
		}
	}
	var out []v1.NodeAddress
	for _, set := range [][]*v1.NodeAddress{internal, external} {
		for _, a := range set {
			if a != nil {
				out = append(out, *a)
			}
		}
	}
	if hostname != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: hostname})
	}
	return out
}

func containsAddr(ps []netip.Prefix, a netip.Addr) bool {
	return slices.ContainsFunc(ps, func(p netip.Prefix) bool { return p.Contains(a) })
}
