package openstack

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunk_details"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
)

// A Node's addresses are the upstream CCM's, in its types and order, so that swapping its CCM
// for ccm changes no Node: that list is what kubelets, CNIs and NodePort users select from.
// The rule, read from upstream's nodeAddresses (pkg/openstack/instances_addresses.go):
//
//  1. InternalIP: the fixed IPs of the server's ACTIVE ports, in Neutron's order;
//  2. ExternalIP: Nova's accessIPv4, then accessIPv6;
//  3. Hostname: the server's metadata "hostname", if set (else the node controller keeps the
//     kubelet's Hostname address);
//  4. Nova's server addresses, network by network in name order, each network's list in
//     Nova's order, plus the fixed IPs of trunk subports under their network's name: a
//     floating IP is ExternalIP; an address on a public-network-name network is ExternalIP
//     (and no longer anything else); on any other network it is InternalIP if
//     internal-network-name is empty or names the network, else dropped (from step 1 too);
//  5. with address-sort-order, addresses in its CIDRs move to the front, by CIDR then by
//     address; the rest keep their order.
//
// Duplicates (same type and address) are kept once, and with ipv6-support-disabled IPv6
// addresses (other than accessIPv4) are left out.

// hostnameMetadataKey is the server metadata key upstream reports as Hostname.
const hostnameMetadataKey = "hostname"

// serverPort is a Neutron port with its trunk's subports, if it is a trunk's parent.
type serverPort struct {
	ports.Port
	trunk_details.TrunkDetailsExt
}

// addressOpts is [Networking] as the address rule reads it.
type addressOpts struct {
	ipv6Disabled     bool
	public, internal []string
	sortOrder        []*net.IPNet
}

func (c *Config) addressOpts() addressOpts {
	n := c.Networking
	o := addressOpts{ipv6Disabled: n.IPv6SupportDisabled, public: n.PublicNetworkName, internal: n.InternalNetworkName}
	o.sortOrder, _ = parseSortOrder(n.AddressSortOrder)
	return o
}

// parseSortOrder splits address-sort-order as upstream does (commas and blanks) and keeps the
// valid CIDRs; the others are returned to be reported (upstream ignores them with a warning).
func parseSortOrder(s string) (cidrs []*net.IPNet, invalid []string) {
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		if _, n, err := net.ParseCIDR(item); err == nil {
			cidrs = append(cidrs, n)
		} else {
			invalid = append(invalid, item)
		}
	}
	return cidrs, invalid
}

// networkingNotices are the start-up reports for [Networking] values upstream accepts but that
// do not do what they seem to.
func (c *Config) networkingNotices() []string {
	var out []string
	n := c.Networking
	if _, invalid := parseSortOrder(n.AddressSortOrder); len(invalid) > 0 {
		out = append(out, fmt.Sprintf("[Networking] address-sort-order: %s: not a CIDR, ignored (as the upstream CCM does); write CIDRs such as 10.0.0.0/8, separated by commas", strings.Join(invalid, ", ")))
	}
	for key, names := range map[string][]string{"internal-network-name": n.InternalNetworkName, "public-network-name": n.PublicNetworkName} {
		if slices.Contains(names, "") {
			out = append(out, "[Networking] "+key+": an empty value names a network called \"\" (as in the upstream CCM); remove the line to leave the key unset")
		}
	}
	sort.Strings(out)
	return out
}

// novaAddress is one entry of a server's "addresses" in Nova.
type novaAddress struct{ typ, addr string }

// decodeAddresses reads Nova's server addresses: network name -> list of {addr, OS-EXT-IPS:type}.
func decodeAddresses(raw map[string]any) (map[string][]novaAddress, error) {
	out := make(map[string][]novaAddress, len(raw))
	for network, v := range raw {
		list, ok := v.([]any)
		if !ok && v != nil {
			return nil, fmt.Errorf("server addresses of network %q: not a list", network)
		}
		out[network] = []novaAddress{}
		for _, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("server addresses of network %q: an entry is not an object", network)
			}
			var a novaAddress
			for key, dst := range map[string]*string{"addr": &a.addr, "OS-EXT-IPS:type": &a.typ} {
				if x, present := m[key]; present && x != nil {
					s, ok := x.(string)
					if !ok {
						return nil, fmt.Errorf("server addresses of network %q: %s is not a string", network, key)
					}
					*dst = s
				}
			}
			out[network] = append(out[network], a)
		}
	}
	return out, nil
}

// isIPv6 is upstream's test: anything that does not parse as IPv4 counts as IPv6.
func isIPv6(addr string) bool { return net.ParseIP(addr).To4() == nil }

// nodeAddresses computes the Node's addresses from its server, the server's ports, the trunk
// subports found (by port ID) and the names of their networks (by network ID). A subport or
// network not found is skipped, as upstream skips one it cannot read. Pure.
func nodeAddresses(srv *servers.Server, ps []serverPort, subports map[string]ports.Port, networkNames map[string]string, o addressOpts) ([]v1.NodeAddress, error) {
	addrs := []v1.NodeAddress{}
	add := func(t v1.NodeAddressType, a string) {
		na := v1.NodeAddress{Type: t, Address: a}
		if !slices.Contains(addrs, na) {
			addrs = append(addrs, na)
		}
	}
	drop := func(a string) { // every type
		addrs = slices.DeleteFunc(addrs, func(na v1.NodeAddress) bool { return na.Address == a })
	}
	for _, p := range ps {
		if p.Status != "ACTIVE" {
			continue
		}
		for _, ip := range p.FixedIPs {
			if !(o.ipv6Disabled && isIPv6(ip.IPAddress)) {
				add(v1.NodeInternalIP, ip.IPAddress)
			}
		}
	}
	if srv.AccessIPv4 != "" {
		add(v1.NodeExternalIP, srv.AccessIPv4)
	}
	if srv.AccessIPv6 != "" && !o.ipv6Disabled {
		add(v1.NodeExternalIP, srv.AccessIPv6)
	}
	if h := srv.Metadata[hostnameMetadataKey]; h != "" {
		add(v1.NodeHostName, h)
	}

	byNetwork, err := decodeAddresses(srv.Addresses)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		for _, sp := range p.SubPorts {
			sub, ok := subports[sp.PortID]
			if !ok {
				continue
			}
			name, ok := networkNames[sub.NetworkID]
			if !ok {
				continue
			}
			for _, ip := range sub.FixedIPs {
				if !(o.ipv6Disabled && isIPv6(ip.IPAddress)) {
					byNetwork[name] = append(byNetwork[name], novaAddress{typ: "fixed", addr: ip.IPAddress})
				}
			}
		}
	}
	names := make([]string, 0, len(byNetwork))
	for n := range byNetwork {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, network := range names {
		for _, a := range byNetwork[network] {
			var t v1.NodeAddressType
			switch {
			case a.typ == "floating":
				t = v1.NodeExternalIP
			case slices.Contains(o.public, network):
				t = v1.NodeExternalIP
				drop(a.addr) // a public network's address is not also internal
			case len(o.internal) == 0 || slices.Contains(o.internal, network):
				t = v1.NodeInternalIP
			default:
				drop(a.addr) // not on an internal network
				continue
			}
			if !(o.ipv6Disabled && isIPv6(a.addr)) {
				add(t, a.addr)
			}
		}
	}
	if len(o.sortOrder) > 0 {
		sortAddresses(addrs, o.sortOrder)
	}
	return addrs, nil
}

// sortAddresses moves addresses in the CIDRs to the front, the first CIDR's first, each CIDR's
// group in address order; addresses in none keep their relative order.
func sortAddresses(addrs []v1.NodeAddress, cidrs []*net.IPNet) {
	rank := func(a string) int { // higher first; 0: in no CIDR (or not an IP)
		ip := net.ParseIP(a)
		if ip == nil {
			return 0
		}
		for i, n := range cidrs {
			if n.Contains(ip) {
				return len(cidrs) - i
			}
		}
		return 0
	}
	slices.SortStableFunc(addrs, func(x, y v1.NodeAddress) int {
		rx, ry := rank(x.Address), rank(y.Address)
		if rx > 0 && rx == ry {
			return bytes.Compare(net.ParseIP(x.Address), net.ParseIP(y.Address))
		}
		return cmp.Compare(ry, rx)
	})
}

// idFilter is a Neutron list query for several IDs at once (id=a&id=b: any of them).
type idFilter []string

func (f idFilter) query() (string, error) {
	return "?" + url.Values{"id": f}.Encode(), nil
}
func (f idFilter) ToPortListQuery() (string, error)    { return f.query() }
func (f idFilter) ToNetworkListQuery() (string, error) { return f.query() }

// idBatch bounds the IDs in one list query (URL length).
const idBatch = 50

// networkNameTTL is how long a network's name is trusted: only trunk subports need names
// (Nova names the other networks itself), and names rarely change.
const networkNameTTL = 10 * time.Minute

type cachedName struct {
	name string
	at   time.Time
}

// networkNames caches endpoint|network ID -> name for all Clouds of the process.
var networkNames sync.Map

// serverAddresses reads what nodeAddresses needs beyond the server: its ports (one list), and
// for trunk parents their subports (one list per 50) and the subports' network names (cached;
// one list per 50 missing). A failed read is an error (the Node keeps its addresses) where
// upstream would leave the subport out.
func (i *instances) serverAddresses(ctx context.Context, cl *clients, s *servers.Server) ([]v1.NodeAddress, error) {
	pages, err := ports.List(cl.network, ports.ListOpts{DeviceID: s.ID}).AllPages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing ports of server %s: %w", s.ID, err)
	}
	var ps []serverPort
	if err := ports.ExtractPortsInto(pages, &ps); err != nil {
		return nil, err
	}
	var subIDs []string
	for _, p := range ps {
		for _, sp := range p.SubPorts {
			subIDs = append(subIDs, sp.PortID)
		}
	}
	subports := map[string]ports.Port{}
	names := map[string]string{}
	if len(subIDs) > 0 {
		for chunk := range slices.Chunk(subIDs, idBatch) {
			pages, err := ports.List(cl.network, idFilter(chunk)).AllPages(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing trunk subports of server %s: %w", s.ID, err)
			}
			found, err := ports.ExtractPorts(pages)
			if err != nil {
				return nil, err
			}
			for _, p := range found {
				subports[p.ID] = p
			}
		}
		var netIDs []string
		for _, p := range subports {
			netIDs = append(netIDs, p.NetworkID)
		}
		if names, err = networkNamesOf(ctx, cl, netIDs); err != nil {
			return nil, err
		}
	}
	return nodeAddresses(s, ps, subports, names, i.c.cfg.addressOpts())
}

// networkNamesOf returns the names of the networks ids (those that exist), from the cache or
// one list per idBatch missing ones.
func networkNamesOf(ctx context.Context, cl *clients, ids []string) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	now := time.Now()
	for _, id := range ids {
		if _, done := out[id]; done || slices.Contains(missing, id) {
			continue
		}
		if v, ok := networkNames.Load(cl.network.Endpoint + "|" + id); ok && now.Sub(v.(cachedName).at) < networkNameTTL {
			out[id] = v.(cachedName).name
			continue
		}
		missing = append(missing, id)
	}
	for chunk := range slices.Chunk(missing, idBatch) {
		pages, err := networks.List(cl.network, idFilter(chunk)).AllPages(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing networks of trunk subports: %w", err)
		}
		found, err := networks.ExtractNetworks(pages)
		if err != nil {
			return nil, err
		}
		for _, n := range found {
			out[n.ID] = n.Name
			networkNames.Store(cl.network.Endpoint+"|"+n.ID, cachedName{name: n.Name, at: now})
		}
	}
	return out, nil
}
