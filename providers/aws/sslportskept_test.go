package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

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
		svc := tcpService("k", map[string]string{annotationPrefix + annSSLCert: keptCert, annotationPrefix + annSSLPorts: c.sslPorts})
		o, err := parseOptions(svc)
		if err != nil {
			t.Fatal(err)
		}
		msg := o.keepTLSListeners(svc, c.current)
		var kept []int32
		for _, p := range svc.Spec.Ports {
			if o.KeptTLS[p.Port] {
				kept = append(kept, p.Port)
				if !o.sslPort(p) {
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
		if (msg != "") != (len(want) > 0) || (msg != "" && (!strings.Contains(msg, annotationPrefix+annSSLPorts) || !strings.Contains(msg, "kept encrypted") || !strings.Contains(msg, "443,8443"))) {
			t.Errorf("%q: Warning %q", c.sslPorts, msg)
		}
	}
}

// An empty item names the port "": the only port of a Service, unnamed, has that name, so it
// terminates TLS (upstream's getPortSets and ccm alike); the Warning says so, not "no port".
func TestEmptySSLPortItem(t *testing.T) {
	one := &v1.Service{ObjectMeta: svcWith(nil).ObjectMeta, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer,
		Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	one.Annotations = map[string]string{annotationPrefix + annSSLCert: keptCert, annotationPrefix + annSSLPorts: "8443,"}
	o, err := parseOptions(one)
	if err != nil {
		t.Fatal(err)
	}
	if !o.sslPort(one.Spec.Ports[0]) {
		t.Errorf("unnamed port 80 with ssl-ports \"8443,\": plain, want TLS (the name \"\")")
	}
	if !advised(o, annSSLPorts, "port 80 terminates TLS") || advised(o, annSSLPorts, "no port has such a name") {
		t.Errorf("advice %q", o.Advice)
	}
	two := tcpService("e", map[string]string{annotationPrefix + annSSLCert: keptCert, annotationPrefix + annSSLPorts: "443,,"})
	if o, err = parseOptions(two); err != nil {
		t.Fatal(err)
	}
	if !advised(o, annSSLPorts, "selects none") || o.sslPort(two.Spec.Ports[1]) {
		t.Errorf("two named ports, \"443,,\": advice %q, port 80 TLS %v", o.Advice, o.sslPort(two.Spec.Ports[1]))
	}
}

// Through the SDK at the fake, a classic ELB and an NLB whose listeners on 443 and 80 are TLS
// (ssl-ports "443,80"), then ssl-ports "443, 80" (as an earlier ccm read it, both TLS): the
// listener on 80 stays encrypted, 0 writes at the fake, and a Warning naming the annotation.
func TestSSLPortsWithSpacesKeepTLSListener(t *testing.T) {
	for _, nlb := range []bool{false, true} {
		t.Run(fmt.Sprintf("nlb=%v", nlb), func(t *testing.T) {
			h := newHarness(t, "keep")
			ctx := context.Background()
			c := h.cloud(t, "")
			lb, _ := c.LoadBalancer()
			nodes := parityNodes(h, "k-a")
			ann := map[string]string{annotationPrefix + annSSLCert: keptCert, annotationPrefix + annSSLPorts: "443,80"}
			if nlb {
				ann[annotationPrefix+annType] = "nlb"
			}
			svc := tcpService("keep", ann)
			listeners := func() map[int32]string {
				out := map[int32]string{}
				if nlb {
					_, ls, _, _ := h.fake.NLBByName(c.lb.name(svc))
					for _, l := range ls {
						out[int32(l.Port)] = l.Protocol
					}
					return out
				}
				e, _ := h.fake.ClassicLB(c.lb.name(svc))
				for _, l := range e.Listeners {
					out[int32(l.Port)] = l.Protocol
				}
				return out
			}
			for range 2 { // an NLB is provisioning at first
				_, _ = lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
			}
			before := listeners()
			if !encryptedProtocol(before[80]) || !encryptedProtocol(before[443]) {
				t.Fatalf("listeners %v, want 443 and 80 encrypted", before)
			}
			ann[annotationPrefix+annSSLPorts] = "443, 80"
			w0, ops0 := h.fake.Writes(), h.fake.Operations()
			if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
				t.Fatal(err)
			}
			if w := h.fake.Writes() - w0; w != 0 {
				ops := h.fake.Operations()
				for k := range ops0 {
					ops[k] -= ops0[k]
				}
				t.Errorf("%d writes, want 0: %v", w, ops)
			}
			if got := listeners(); !maps.Equal(got, before) {
				t.Errorf("listeners %v, were %v", got, before)
			}
			if ok, evs := h.events.Await(svc, 2*time.Second, v1.EventTypeWarning, reasonListenerKeptTLS, annotationPrefix+annSSLPorts, "/80 kept encrypted"); !ok {
				t.Errorf("no Warning saying the listener on 80 is kept encrypted: %v", evs)
			}
		})
	}
}
