package ippool

import (
	"net/netip"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestVIPHelpers(t *testing.T) {
	svc := &v1.Service{Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Port: 443, Protocol: v1.ProtocolTCP}, {Port: 53, Protocol: v1.ProtocolUDP}}}}
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.1"}, {Hostname: "lb.example"}, {IP: "2001:db8::1"}}
	if got := StatusAddrs(svc); !slices.Equal(got, []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")}) {
		t.Errorf("StatusAddrs = %v", got)
	}
	if got := ParseAddrs([]string{"192.0.2.9", "not-an-ip", ""}); len(got) != 1 || got[0].String() != "192.0.2.9" {
		t.Errorf("ParseAddrs = %v", got)
	}
	if got := Ports(svc); !slices.Equal(got, []string{"TCP/443", "UDP/53"}) {
		t.Errorf("Ports = %v", got)
	}
	nodes := []*v1.Node{{}, {}}
	nodes[0].Name, nodes[1].Name = "b", "a"
	if got := NodeNames(nodes); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("NodeNames = %v", got)
	}
	st := Status([]string{"192.0.2.1"}, svc)
	if len(st.Ingress) != 1 || st.Ingress[0].IP != "192.0.2.1" || st.Ingress[0].IPMode == nil || *st.Ingress[0].IPMode != v1.LoadBalancerIPModeVIP || len(st.Ingress[0].Ports) != 2 {
		t.Errorf("Status = %+v", st)
	}
}
