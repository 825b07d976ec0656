// Package routes decides which cloud routes are a cluster's, and plans the changes the route
// controller asks for, for every provider that routes Pod CIDRs through a shared table or
// router. It makes no cloud call: a provider reads the routes its cloud holds, asks here what
// to do, and writes the steps at its edge.
//
// A route is this cluster's when its destination lies in the cluster CIDRs (--cluster-cidr) and
// either the provider recorded it as this cluster's when it made it, or its next hop is one of
// this cluster's Nodes (a route made before ccm, by the upstream CCM, is taken over that way).
// Every other route on the table is another cluster's or an operator's, and is never listed,
// changed or deleted, whatever the route controller asks: two clusters with overlapping Pod
// CIDRs can share one router.
package routes

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
)

// Route is a route as a cloud holds it: traffic for Destination goes to Hop, an address (or,
// in a cloud that routes to machines, a machine's ID).
type Route struct {
	Destination netip.Prefix
	Hop         string
}

func (r Route) String() string { return r.Destination.String() + " via " + r.Hop }

// Name is the route controller's name for r. It carries the hop, so that DeleteRoute finds the
// route it was listed as even when the Node it pointed at is gone.
func Name(r Route) string { return r.String() }

// ParseName reads a Name back; ok is false for a name that is not one.
func ParseName(name string) (Route, bool) {
	dest, hop, ok := strings.Cut(name, " via ")
	p, err := netip.ParsePrefix(dest)
	if !ok || err != nil || hop == "" {
		return Route{}, false
	}
	return Route{Destination: p, Hop: hop}, true
}

// ClusterCIDRScoped is implemented by providers whose routes are scoped by the cluster CIDRs.
// ccm calls UseClusterCIDRs once, before Initialize, with --cluster-cidr's CIDRs.
type ClusterCIDRScoped interface {
	UseClusterCIDRs(cidrs []netip.Prefix)
}

// ParseClusterCIDRs reads --cluster-cidr (comma-separated CIDRs).
func ParseClusterCIDRs(flag string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(flag, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("--cluster-cidr: %q is not a CIDR: %w", s, err)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Scope is what makes a route this cluster's.
type Scope struct {
	// ClusterCIDRs are --cluster-cidr's. With none, no route is this cluster's: ccm refuses
	// to start a route controller without them.
	ClusterCIDRs []netip.Prefix
	// Nodes maps each hop one of this cluster's Nodes answers at to its name (NodeHops).
	Nodes map[string]types.NodeName
}

// NodeHops maps the InternalIP addresses of nodes to their names: the addresses a route to a
// Node's Pod CIDR may go through.
func NodeHops(nodes []*v1.Node) map[string]types.NodeName {
	out := map[string]types.NodeName{}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); a.Type == v1.NodeInternalIP && err == nil {
				out[ip.Unmap().String()] = types.NodeName(n.Name)
			}
		}
	}
	return out
}

// HopOf is the address of node that a route to a destination of family like dest goes
// through: its first InternalIP of that family.
func HopOf(node *v1.Node, dest netip.Prefix) (string, error) {
	for _, a := range node.Status.Addresses {
		ip, err := netip.ParseAddr(a.Address)
		if a.Type == v1.NodeInternalIP && err == nil && ip.Unmap().Is4() == dest.Addr().Is4() {
			return ip.Unmap().String(), nil
		}
	}
	family := "IPv6"
	if dest.Addr().Is4() {
		family = "IPv4"
	}
	return "", fmt.Errorf("Node %q has no %s InternalIP address to route %s through", node.Name, family, dest)
}

// InCluster reports whether p lies within one of the cluster CIDRs.
func (s Scope) InCluster(p netip.Prefix) bool {
	return slices.ContainsFunc(s.ClusterCIDRs, func(c netip.Prefix) bool {
		return c.Addr().Is4() == p.Addr().Is4() && c.Bits() <= p.Bits() && c.Contains(p.Addr())
	})
}

// Owned reports whether r is this cluster's (see the package comment); recorded says whether
// the provider holds a record that it made r for this cluster.
func (s Scope) Owned(r Route, recorded bool) bool {
	if !s.InCluster(r.Destination) {
		return false
	}
	_, node := s.Nodes[r.Hop]
	return recorded || node
}

// List is the route controller's view of the routes held: this cluster's only, each with the
// Node its hop belongs to, or a blackhole when no Node of this cluster answers at it (its Node
// is gone, and the route controller then deletes it).
func (s Scope) List(held []Route, recorded func(Route) bool) []*cloudprovider.Route {
	var out []*cloudprovider.Route
	for _, r := range held {
		if !s.Owned(r, recorded(r)) {
			continue
		}
		node, ok := s.Nodes[r.Hop]
		out = append(out, &cloudprovider.Route{Name: Name(r), TargetNode: node, DestinationCIDR: r.Destination.String(), Blackhole: !ok})
	}
	return out
}
