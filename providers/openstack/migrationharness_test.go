package openstack

import (
	"fmt"
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/cloudtest"
	"github.com/ccm-project/ccm/common/lbname"
	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// The migration part of the harness: the fake seeded as the upstream CCM leaves it
// (fake.SeedUpstream: its names, tags, descriptions, listeners, pools, members, floating IPs,
// and with manage-security-groups its per-Service group attached to the nodes' ports).

func (h *harness) SeedUpstream(t cloudtest.T, cluster string, svcs []*v1.Service, nodes []*v1.Node) []*v1.Service {
	var out []*v1.Service
	for _, svc := range svcs {
		svc = svc.DeepCopy()
		u := fake.UpstreamService{Cluster: cluster, Namespace: svc.Namespace, Name: svc.Name, UID: string(svc.UID), Nodes: map[string]string{}}
		for _, p := range svc.Spec.Ports {
			u.Ports = append(u.Ports, fake.UpstreamPort{Protocol: string(p.Protocol), Port: int(p.Port), NodePort: int(p.NodePort)})
		}
		// Upstream serves a Service, dual-stack too, on one load balancer of spec.ipFamilies[0]
		// (singlefamily.go): IPv6 first puts it on the IPv6 subnet, members at the nodes'
		// IPv6 addresses (from their status: the harness's instances have IPv4 only).
		u.IPv6 = families(svc)[0] == v1.IPv6Protocol
		h.mu.Lock()
		for _, n := range nodes {
			u.Nodes[n.Name] = h.ips[n.Name]
			if u.IPv6 {
				u.Nodes[n.Name] = internalIPv6(n)
			}
			if h.extra == manageSG {
				u.SecurityGroupPorts = append(u.SecurityGroupPorts, h.fake.ServerPortID(h.fake.ServerID(n.Name)))
			}
		}
		h.mu.Unlock()
		id, addr := h.fake.SeedUpstream(u)
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		svc.Annotations[annLoadBalancerID], svc.Annotations[annLoadBalancerAddress] = id, addr
		svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: addr}}
		out = append(out, svc)
	}
	return out
}

// internalIPv6 is the node's first IPv6 InternalIP, or "".
func internalIPv6(n *v1.Node) string {
	for _, a := range n.Status.Addresses {
		if ip, err := netip.ParseAddr(a.Address); a.Type == v1.NodeInternalIP && err == nil && ip.Is6() {
			return ip.String()
		}
	}
	return ""
}

// MigrationCounts: load balancer creates; deletes of load balancers, listeners, pools,
// members, monitors and floating IPs.
func (h *harness) MigrationCounts() (creates, deletes int) {
	for op, n := range h.fake.Calls() {
		switch {
		case op == "octavia.CreateLoadBalancer":
			creates += n
		case strings.HasPrefix(op, "octavia.Delete") || op == "neutron.DeleteFloatingIP":
			deletes += n
		}
	}
	return creates, deletes
}

// Leftovers: upstream's security group for the Service (ccm's own replaces it).
func (h *harness) Leftovers(t cloudtest.T, cluster string, svc *v1.Service) []string {
	var out []string
	for _, g := range h.fake.SecurityGroups() {
		if g.Name == fake.UpstreamSGName(string(svc.UID), svc.Namespace, svc.Name) {
			out = append(out, fmt.Sprintf("security group %s (%s)", g.Name, g.Description))
		}
	}
	return out
}

// Remains: the Service's load balancer (by name), any listener marked or tagged as its own on
// any load balancer, floating IPs described as its own (ccm's or upstream's), and its groups.
func (h *harness) Remains(t cloudtest.T, cluster string, svc *v1.Service) []string {
	out := h.Leftovers(t, cluster, svc)
	name := lbname.Octavia.Name(cluster, svc.Namespace, svc.Name)
	id := ownership.Of(cluster, svc)
	for _, lb := range h.fake.LoadBalancers() {
		if lb.Name == name {
			out = append(out, "load balancer "+lb.Name)
			continue
		}
		for _, l := range lb.Listeners {
			if ownership.DescribedBy(id, l.Description) {
				out = append(out, fmt.Sprintf("listener %s/%d on %s", l.Protocol, l.Port, lb.Name))
			}
		}
	}
	for _, f := range h.fake.FloatingIPs() {
		if ownership.DescribedBy(id, f.Description) || f.Description == legacyFIPDescription(id) {
			out = append(out, "floating IP "+f.Address)
		}
	}
	for _, g := range h.fake.SecurityGroups() {
		if g.Name == sgName(name) {
			out = append(out, "security group "+g.Name)
		}
	}
	return out
}

var _ cloudtest.MigrationHarness = (*harness)(nil)
