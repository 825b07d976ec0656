package ippool

import (
	"fmt"
	"net/netip"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// What providers handing out VIPs from pools (dummy, vsphere) share about Services.

// StatusAddrs returns the addresses in the Service's load balancer status: what it held before
// a restart, so they stay reserved for it.
func StatusAddrs(svc *v1.Service) []netip.Addr {
	var out []netip.Addr
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// ParseAddrs parses recorded addresses, skipping any that do not parse.
func ParseAddrs(ips []string) []netip.Addr {
	out := make([]netip.Addr, 0, len(ips))
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// Status is the Service status for VIPs: each address with ipMode VIP (traffic arrives with the
// VIP as destination) and the Service's ports.
func Status(ips []string, svc *v1.Service) *v1.LoadBalancerStatus {
	st := &v1.LoadBalancerStatus{}
	vip := v1.LoadBalancerIPModeVIP
	var ports []v1.PortStatus
	for _, p := range svc.Spec.Ports {
		ports = append(ports, v1.PortStatus{Port: p.Port, Protocol: p.Protocol})
	}
	for _, ip := range ips {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: ip, IPMode: &vip, Ports: ports})
	}
	return st
}

// Ports lists the Service's ports as sorted "PROTOCOL/port", for fingerprints.
func Ports(svc *v1.Service) []string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("%s/%d", p.Protocol, p.Port))
	}
	sort.Strings(out)
	return out
}

// NodeNames lists the nodes' names sorted, for fingerprints.
func NodeNames(nodes []*v1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	sort.Strings(out)
	return out
}
