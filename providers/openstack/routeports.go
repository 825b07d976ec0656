package openstack

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/routes"
)

// nodePort is the port of node's server that holds hop; nil when port security is off on it
// (no address pair is needed then). No such port is an error: the route would lead nowhere.
func nodePort(ctx context.Context, cl *clients, node *v1.Node, hop string) (*ports.Port, error) {
	sid, err := serverID(node.Spec.ProviderID)
	if err != nil {
		return nil, fmt.Errorf("openstack: route for Node %q: %w", node.Name, err)
	}
	all, err := listServerPorts(ctx, cl, sid)
	if err != nil {
		return nil, fmt.Errorf("openstack: %w", err)
	}
	for _, p := range all {
		if slices.ContainsFunc(p.FixedIPs, func(ip ports.IP) bool { return sameAddr(ip.IPAddress, hop) }) {
			if !p.takesGroups() {
				return nil, nil
			}
			return &p.Port, nil
		}
	}
	return nil, fmt.Errorf("openstack: route for Node %q: no port of server %s holds its address %s", node.Name, sid, hop)
}

// pairPort is the port that allows r's destination for its hop: the Node's own port while
// the Node is there, else a server's port holding the hop with that pair (a Node deleted with
// its server running); nil if none.
func (t *routeTable) pairPort(ctx context.Context, cl *clients, name types.NodeName, r routes.Route) (*ports.Port, error) {
	if node, err := t.node(name); err == nil {
		if hop, err := routes.HopOf(node, r.Destination); err == nil && hop == r.Hop {
			p, err := nodePort(ctx, cl, node, r.Hop)
			if err == nil {
				return p, nil
			}
		}
	}
	all, err := listPorts(ctx, cl, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: r.Hop}}})
	if err != nil {
		return nil, err
	}
	for _, p := range all {
		if _, has := pairsWithout(p, r.Destination); has && strings.HasPrefix(p.DeviceOwner, "compute:") {
			return &p, nil
		}
	}
	return nil, nil
}

func sameAddr(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x.Unmap() == y.Unmap()
}
