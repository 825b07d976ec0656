package aws

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

const keptCert = "arn:aws:acm:us-east-1:1:certificate/x"

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
			ann := map[string]string{annotations.Prefix + annotations.SSLCert: keptCert, annotations.Prefix + annotations.SSLPorts: "443,80"}
			if nlb {
				ann[annotations.Prefix+annotations.Type] = "nlb"
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
			if !annotations.EncryptedProtocol(before[80]) || !annotations.EncryptedProtocol(before[443]) {
				t.Fatalf("listeners %v, want 443 and 80 encrypted", before)
			}
			ann[annotations.Prefix+annotations.SSLPorts] = "443, 80"
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
			if ok, evs := h.events.Await(svc, 2*time.Second, v1.EventTypeWarning, reasonListenerKeptTLS, annotations.Prefix+annotations.SSLPorts, "/80 kept encrypted"); !ok {
				t.Errorf("no Warning saying the listener on 80 is kept encrypted: %v", evs)
			}
		})
	}
}
