package openstack

import (
	"net/netip"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// annHostname puts a host name in the Service's status instead of the address, as upstream.
const annHostname = annPrefix + "hostname"

// defaultIngressHostnameSuffix is upstream's default [LoadBalancer] ingress-hostname-suffix.
const defaultIngressHostnameSuffix = "nip.io"

// statusOpts is what shapes a Service's load balancer status besides its addresses.
type statusOpts struct {
	hostname string // loadbalancer.openstack.org/hostname: the only entry
	proxy    bool   // proxy-protocol is on
	// suffix: enable-ingress-hostname = true makes a PROXY Service's entry the host name
	// "<address>.<suffix>" ("": off).
	suffix string
}

// ingressSuffix is the suffix of enable-ingress-hostname ("" when it is off).
func (c LBConfig) ingressSuffix() string {
	if c.EnableIngressHostname == nil || !*c.EnableIngressHostname {
		return ""
	}
	if c.IngressHostnameSuffix == nil || strings.TrimSpace(*c.IngressHostnameSuffix) == "" {
		return defaultIngressHostnameSuffix
	}
	return strings.TrimSpace(*c.IngressHostnameSuffix)
}

// proxyOn: proxy-protocol asks for PROXY or PROXYV2 (the values spec reads).
func proxyOn(svc *v1.Service) bool {
	pool, _ := proxyPool(svc)
	return pool != ""
}

func (l *loadBalancers) statusOpts(svc *v1.Service) statusOpts {
	return statusOpts{hostname: strings.TrimSpace(svc.Annotations[annHostname]), proxy: proxyOn(svc), suffix: l.c.cfg.LoadBalancer.ingressSuffix()}
}

// lbStatus is the status upstream reports: the hostname annotation alone when set; else, with
// proxy-protocol, the host name "<address>.<suffix>" under enable-ingress-hostname, or the
// address with ipMode Proxy (kube-proxy then sends in-cluster clients through the load
// balancer, which adds the PROXY header the backends expect); else the address with ipMode
// VIP. One entry per family's address (upstream has one family). The load-balancer-address
// annotation carries the address in every case.
func lbStatus(addrs []string, svc *v1.Service, o statusOpts) *v1.LoadBalancerStatus {
	var ports []v1.PortStatus
	for _, p := range svc.Spec.Ports {
		ports = append(ports, v1.PortStatus{Port: p.Port, Protocol: p.Protocol})
	}
	st := &v1.LoadBalancerStatus{}
	if len(addrs) == 0 {
		return st
	}
	if o.hostname != "" {
		st.Ingress = []v1.LoadBalancerIngress{{Hostname: o.hostname, Ports: ports}}
		return st
	}
	for _, a := range addrs {
		switch {
		case o.proxy && o.suffix != "":
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{Hostname: a + "." + o.suffix, Ports: ports})
		case o.proxy:
			mode := v1.LoadBalancerIPModeProxy
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: a, IPMode: &mode, Ports: ports})
		default:
			mode := v1.LoadBalancerIPModeVIP
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: a, IPMode: &mode, Ports: ports})
		}
	}
	return st
}

// statusAddrs are the addresses the Service's status holds: its IP entries, the address a
// "<address>.<suffix>" host name starts with, and, when an entry is a host name of another
// kind (the hostname annotation), the load-balancer-address annotation ccm writes with it.
func statusAddrs(svc *v1.Service) []netip.Addr {
	var out []netip.Addr
	other := false
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil {
			out = append(out, a)
			continue
		}
		if in.Hostname == "" {
			continue
		}
		if a, ok := hostnameAddr(in.Hostname); ok {
			out = append(out, a)
		} else {
			other = true
		}
	}
	if other {
		if a, err := netip.ParseAddr(svc.Annotations[annLoadBalancerAddress]); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// hostnameAddr is the address a host name "<IPv4>.<suffix>" or "<IPv6>.<suffix>" starts with.
func hostnameAddr(h string) (netip.Addr, bool) {
	if head, _, ok := strings.Cut(h, "."); ok {
		if a, err := netip.ParseAddr(head); err == nil && a.Is6() {
			return a, true
		}
	}
	labels := strings.SplitN(h, ".", 5)
	if len(labels) == 5 {
		if a, err := netip.ParseAddr(strings.Join(labels[:4], ".")); err == nil && a.Is4() {
			return a, true
		}
	}
	return netip.Addr{}, false
}
