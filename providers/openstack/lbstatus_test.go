package openstack

import (
	"context"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// The status as upstream's createLoadBalancerStatus makes it, for every combination of the
// hostname annotation, proxy-protocol and enable-ingress-hostname.
func TestLBStatus(t *testing.T) {
	vip, proxy := v1.LoadBalancerIPModeVIP, v1.LoadBalancerIPModeProxy
	ports := []v1.PortStatus{{Port: 80, Protocol: v1.ProtocolTCP}}
	for _, tc := range []struct {
		name  string
		addrs []string
		o     statusOpts
		want  []v1.LoadBalancerIngress
	}{
		{"plain", []string{"172.24.4.10"}, statusOpts{}, []v1.LoadBalancerIngress{{IP: "172.24.4.10", IPMode: &vip, Ports: ports}}},
		{"proxy", []string{"172.24.4.10"}, statusOpts{proxy: true}, []v1.LoadBalancerIngress{{IP: "172.24.4.10", IPMode: &proxy, Ports: ports}}},
		{"proxy, ingress hostname", []string{"172.24.4.10"}, statusOpts{proxy: true, suffix: "nip.io"}, []v1.LoadBalancerIngress{{Hostname: "172.24.4.10.nip.io", Ports: ports}}},
		{"ingress hostname without proxy", []string{"172.24.4.10"}, statusOpts{suffix: "example.org"}, []v1.LoadBalancerIngress{{IP: "172.24.4.10", IPMode: &vip, Ports: ports}}},
		{"hostname annotation", []string{"172.24.4.10"}, statusOpts{hostname: "lb.example.org"}, []v1.LoadBalancerIngress{{Hostname: "lb.example.org", Ports: ports}}},
		{"hostname annotation wins over proxy", []string{"172.24.4.10", "fd00::1"}, statusOpts{hostname: "lb.example.org", proxy: true, suffix: "nip.io"}, []v1.LoadBalancerIngress{{Hostname: "lb.example.org", Ports: ports}}},
		{"dual-stack proxy", []string{"172.24.4.10", "fd00::1"}, statusOpts{proxy: true}, []v1.LoadBalancerIngress{{IP: "172.24.4.10", IPMode: &proxy, Ports: ports}, {IP: "fd00::1", IPMode: &proxy, Ports: ports}}},
		{"no address", nil, statusOpts{hostname: "lb.example.org"}, nil},
	} {
		got := lbStatus(tc.addrs, lbService("w", nil), tc.o)
		if !reflect.DeepEqual(got.Ingress, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got.Ingress, tc.want)
		}
	}
}

// What ccm reads back from a status (dropping a family, repairing a deleted load balancer,
// finding a detached floating IP) finds the addresses in every shape lbStatus writes.
func TestStatusAddrs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ingress []v1.LoadBalancerIngress
		ann     string
		want    []string
	}{
		{"ips", []v1.LoadBalancerIngress{{IP: "172.24.4.10"}, {IP: "fd00::1"}}, "", []string{"172.24.4.10", "fd00::1"}},
		{"ingress host names", []v1.LoadBalancerIngress{{Hostname: "172.24.4.10.nip.io"}, {Hostname: "fd00::1.sslip.io"}}, "", []string{"172.24.4.10", "fd00::1"}},
		{"hostname annotation: the address annotation", []v1.LoadBalancerIngress{{Hostname: "lb.example.org"}}, "172.24.4.10", []string{"172.24.4.10"}},
		{"hostname annotation without address", []v1.LoadBalancerIngress{{Hostname: "lb.example.org"}}, "", nil},
		{"a name that is no address", []v1.LoadBalancerIngress{{Hostname: "1.2.3.nip.io"}}, "", nil},
		{"address annotation alone is not read", []v1.LoadBalancerIngress{{IP: "172.24.4.10"}}, "172.24.4.99", []string{"172.24.4.10"}},
	} {
		svc := lbService("w", map[string]string{})
		if tc.ann != "" {
			svc.Annotations[annLoadBalancerAddress] = tc.ann
		}
		svc.Status.LoadBalancer.Ingress = tc.ingress
		var got []string
		for _, a := range statusAddrs(svc) {
			got = append(got, a.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, ok := hostnameAddr("10.0.0.1"); ok {
		t.Errorf("a bare address is no host name")
	}
	if a, ok := hostnameAddr("10.0.0.1.example.org"); !ok || a != netip.MustParseAddr("10.0.0.1") {
		t.Errorf("hostnameAddr: %v %v", a, ok)
	}
}

// Through the fake: proxy-protocol gives ipMode Proxy, enable-ingress-hostname the host name
// (default suffix nip.io, or ingress-hostname-suffix), the hostname annotation its name; the
// next sync of a Service whose status is a host name writes nothing.
func TestStatusAsUpstream(t *testing.T) {
	f := newFake(t, fake.Options{})
	nodes := lbNodes("10.0.0.5")
	for _, tc := range []struct {
		name, extra string
		ann         map[string]string
		check       func(st *v1.LoadBalancerStatus, fip string) bool
	}{
		{"proxy", "", map[string]string{annProxyProtocol: "v2"}, func(st *v1.LoadBalancerStatus, fip string) bool {
			return st.Ingress[0].IP == fip && *st.Ingress[0].IPMode == v1.LoadBalancerIPModeProxy
		}},
		{"ingresshost", "enable-ingress-hostname = true\n", map[string]string{annProxyProtocol: "true"}, func(st *v1.LoadBalancerStatus, fip string) bool {
			return st.Ingress[0].IP == "" && st.Ingress[0].Hostname == fip+".nip.io"
		}},
		{"suffix", "enable-ingress-hostname = true\ningress-hostname-suffix = lb.example.org\n", map[string]string{annProxyProtocol: "v1"}, func(st *v1.LoadBalancerStatus, fip string) bool {
			return st.Ingress[0].Hostname == fip+".lb.example.org"
		}},
		{"named", "enable-ingress-hostname = true\n", map[string]string{annProxyProtocol: "v1", annHostname: "web.example.org"}, func(st *v1.LoadBalancerStatus, fip string) bool {
			return len(st.Ingress) == 1 && st.Ingress[0].Hostname == "web.example.org" && st.Ingress[0].IP == ""
		}},
		{"plain", "enable-ingress-hostname = true\n", nil, func(st *v1.LoadBalancerStatus, fip string) bool {
			return st.Ingress[0].IP == fip && *st.Ingress[0].IPMode == v1.LoadBalancerIPModeVIP
		}},
	} {
		lb, sink := migrationCloud(t, f, "floating-network-id = "+fake.PublicNetworkID+"\n"+tc.extra)
		svc := lbService(tc.name, tc.ann)
		st := ensureUntilReady(t, lb, svc, nodes)
		fip := ""
		for _, x := range f.FloatingIPs() {
			if x.PortID == fakeLB(t, f, tc.name).VipPortID {
				fip = x.Address
			}
		}
		if fip == "" || !tc.check(st, fip) {
			t.Errorf("%s: status %+v (floating IP %q)", tc.name, st.Ingress, fip)
			continue
		}
		svc.Status.LoadBalancer = *st
		writes := f.Writes()
		if err := lb.UpdateLoadBalancer(context.Background(), cluster, svc, nodes); err != nil {
			t.Errorf("%s: update: %v", tc.name, err)
		}
		if w := f.Writes() - writes; w != 0 {
			t.Errorf("%s: the next sync wrote %d times (%s)", tc.name, w, f.CallSummary())
		}
		for _, e := range sink.On(svc) {
			if strings.Contains(e, annHostname) {
				t.Errorf("%s: %s", tc.name, e)
			}
		}
	}
}
