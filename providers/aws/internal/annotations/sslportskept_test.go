package annotations

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const keptCert = "arn:aws:acm:us-east-1:1:certificate/x"

// Which ports keep their encrypted listener: only those upstream's reading of ssl-ports leaves
// plain, an earlier ccm's (items trimmed, "*" anywhere) made TLS, and whose listener is
// encrypted now.
func TestKeepTLSListeners(t *testing.T) {
	for _, c := range []struct {
		sslPorts string
		current  map[int32]string
		kept     []int32
	}{
		{"443, 80", map[int32]string{443: "TLS", 80: "TLS"}, []int32{80}},
		{"443, 80", map[int32]string{443: "SSL", 80: "HTTPS"}, []int32{80}}, // classic ELB protocols
		{"443, 80", map[int32]string{443: "TLS", 80: "TCP"}, nil},           // already plain (upstream's): stays so
		{"443, 80", nil, nil}, // a new load balancer: as upstream
		{"443,*", map[int32]string{443: "TLS", 80: "TLS"}, []int32{80}},     // "*" in a list
		{"443, http", map[int32]string{443: "TLS", 80: "TLS"}, []int32{80}}, // by name
		{"443,80", map[int32]string{443: "TLS", 80: "TLS"}, nil},            // upstream makes both TLS
		{"443", map[int32]string{443: "TLS", 80: "TLS"}, nil},               // 80 not asked for at all: made plain
		{" 443 , 80 ", map[int32]string{443: "TLS", 80: "TLS"}, []int32{443, 80}},
	} {
		svc := svcWith(map[string]string{Prefix + SSLCert: keptCert, Prefix + SSLPorts: c.sslPorts})
		o, err := Parse(svc)
		if err != nil {
			t.Fatal(err)
		}
		msg := o.KeepTLSListeners(svc, c.current)
		var kept []int32
		for _, p := range svc.Spec.Ports {
			if o.KeptTLS[p.Port] {
				kept = append(kept, p.Port)
				if !o.SSLPort(p) {
					t.Errorf("%q: port %d kept but not TLS", c.sslPorts, p.Port)
				}
			}
		}
		slices.Sort(kept)
		want := slices.Clone(c.kept)
		slices.Sort(want)
		if !slices.Equal(kept, want) {
			t.Errorf("%q on %v: kept %v, want %v", c.sslPorts, c.current, kept, want)
		}
		if (msg != "") != (len(want) > 0) || (msg != "" && (!strings.Contains(msg, Prefix+SSLPorts) || !strings.Contains(msg, "kept encrypted") || !strings.Contains(msg, "443,8443"))) {
			t.Errorf("%q: Warning %q", c.sslPorts, msg)
		}
	}
}

// An empty item names the port "": the only port of a Service, unnamed, has that name, so it
// terminates TLS (upstream's getPortSets and ccm alike); the Warning says so, not "no port".
func TestEmptySSLPortItem(t *testing.T) {
	one := &v1.Service{ObjectMeta: svcWith(nil).ObjectMeta, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	one.Annotations = map[string]string{Prefix + SSLCert: keptCert, Prefix + SSLPorts: "8443,"}
	o, err := Parse(one)
	if err != nil {
		t.Fatal(err)
	}
	if !o.SSLPort(one.Spec.Ports[0]) {
		t.Errorf("unnamed port 80 with ssl-ports \"8443,\": plain, want TLS (the name \"\")")
	}
	if !advised(o, SSLPorts, "port 80 terminates TLS") || advised(o, SSLPorts, "no port has such a name") {
		t.Errorf("advice %q", o.Advice)
	}
	two := svcWith(map[string]string{Prefix + SSLCert: keptCert, Prefix + SSLPorts: "443,,"})
	if o, err = Parse(two); err != nil {
		t.Fatal(err)
	}
	if !advised(o, SSLPorts, "selects none") || o.SSLPort(two.Spec.Ports[1]) {
		t.Errorf("two named ports, \"443,,\": advice %q, port 80 TLS %v", o.Advice, o.SSLPort(two.Spec.Ports[1]))
	}
}
