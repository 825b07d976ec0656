package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// VIP subnet detection, as upstream: when neither [LoadBalancer] (or the class, or an
// annotation) names a subnet-id nor a network-id (the upstream chart renders an empty
// [LoadBalancer]), the VIP subnet is the subnet of a Node's address: the Node's InternalIP of
// the load balancer's family (else its ExternalIP of that family), looked up among the fixed
// IPs of the ports of the Node's server (device_id). The members go on the same subnet unless
// a member-subnet-id is set. Upstream takes the first Node of the list the service controller
// hands it (in no set order); ccm takes the first by name that has an address of the family,
// so every Service and every restart picks the same one.

// detectedSubnet is one detection: which Node and address it came from, and the subnet.
type detectedSubnet struct {
	node, address, subnet string
}

// vipSubnets caches the detection per IP family (a v1.IPFamily key): it is reused while its
// Node is still among the Nodes with the same address, so an unchanged cluster costs no port
// list per Service or sync; detectMu makes concurrent first syncs wait for one look-up.
type vipSubnets struct {
	detectMu sync.Mutex
	byFamily sync.Map
}

// subnetNodeAddress is the address upstream matches against the node's ports: the first
// InternalIP of the family, else the first ExternalIP of the family ("" if none).
func subnetNodeAddress(n *v1.Node, family v1.IPFamily) string {
	for _, t := range []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP} {
		for _, a := range n.Status.Addresses {
			ip, err := netip.ParseAddr(a.Address)
			if a.Type == t && err == nil && ip.Is6() == (family == v1.IPv6Protocol) {
				return ip.String()
			}
		}
	}
	return ""
}

// subnetNode picks the Node to detect from: the first by name with an address of the family.
func subnetNode(nodes []*v1.Node, family v1.IPFamily) (*v1.Node, string) {
	sorted := append([]*v1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, n := range sorted {
		if a := subnetNodeAddress(n, family); a != "" {
			return n, a
		}
	}
	return nil, ""
}

// subnetOfAddress is the subnet of the fixed IP equal to address on one of ps ("" if none).
func subnetOfAddress(ps []ports.Port, address string) string {
	want, err := netip.ParseAddr(address)
	if err != nil {
		return ""
	}
	for _, p := range ps {
		for _, f := range p.FixedIPs {
			if ip, err := netip.ParseAddr(f.IPAddress); err == nil && ip == want {
				return f.SubnetID
			}
		}
	}
	return ""
}

// stillValid: the cached detection's Node is still among nodes with the same address.
func (d detectedSubnet) stillValid(nodes []*v1.Node, family v1.IPFamily) bool {
	for _, n := range nodes {
		if n.Name == d.node {
			return subnetNodeAddress(n, family) == d.address
		}
	}
	return false
}

// nodeSubnet is the detected VIP subnet of family. With no Node to detect from, the last
// detection stands; with none, it is an error saying what to configure.
func (l *loadBalancers) nodeSubnet(ctx context.Context, cl *clients, nodes []*v1.Node, family v1.IPFamily) (string, error) {
	cached := func() (detectedSubnet, bool) {
		v, ok := l.vip.byFamily.Load(family)
		if !ok {
			return detectedSubnet{}, false
		}
		return v.(detectedSubnet), true
	}
	if d, ok := cached(); ok && d.stillValid(nodes, family) {
		return d.subnet, nil
	}
	l.vip.detectMu.Lock()
	defer l.vip.detectMu.Unlock()
	d, ok := cached()
	if ok && d.stillValid(nodes, family) {
		return d.subnet, nil
	}
	n, addr := subnetNode(nodes, family)
	if n == nil {
		if ok {
			return d.subnet, nil
		}
		return "", fmt.Errorf("no VIP subnet: [LoadBalancer] has no subnet-id or network-id and no Node has an %s address to find it from (set subnet-id, a class, or annotation %s)", family, annSubnetID)
	}
	sid, err := l.serverOf(ctx, n)
	if err != nil || sid == "" {
		return "", fmt.Errorf("no VIP subnet: [LoadBalancer] has no subnet-id or network-id, and the server of node %s (to find it from) is unknown: %v", n.Name, err)
	}
	ps, err := listPorts(ctx, cl, ports.ListOpts{DeviceID: sid})
	if err != nil {
		return "", fmt.Errorf("listing the ports of node %s to find the VIP subnet: %w", n.Name, err)
	}
	sub := subnetOfAddress(ps, addr)
	if sub == "" {
		return "", fmt.Errorf("no VIP subnet: [LoadBalancer] has no subnet-id or network-id, and no port of node %s holds its address %s (set subnet-id, a class, or annotation %s)", n.Name, addr, annSubnetID)
	}
	l.vip.byFamily.Store(family, detectedSubnet{node: n.Name, address: addr, subnet: sub})
	klog.InfoS("VIP subnet taken from a Node's port, as the upstream CCM does without subnet-id or network-id", "node", n.Name, "address", addr, "subnet", sub, "family", family)
	return sub, nil
}
