package aws

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

// Through the SDK at the fake: a Service whose chart rendered "" for every annotation upstream
// reads as unset gets the load balancer a Service without them gets (own security group,
// upstream's default attributes, plain listeners, no PROXY protocol), and a second sync writes
// nothing.
func TestEmptyAnnotationsReconciledAsUnset(t *testing.T) {
	h := newHarness(t, "empty")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	ann := map[string]string{}
	for _, s := range annotations.Supported {
		if annotations.EmptyIsUnset(s, false) {
			ann[annotations.Prefix+s] = ""
		}
	}
	ann[annotations.SourceRanges] = ""
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "chart", Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nil); err != nil {
		t.Fatalf("Service with empty annotations refused: %v", err)
	}
	e, ok := h.fake.ClassicLB(c.lb.name(svc))
	if !ok {
		t.Fatal("no ELB")
	}
	if len(e.SecurityGroups) != 1 || e.CrossZone || e.Attributes.IdleTimeout != 60 || e.Attributes.Draining || e.Attributes.AccessLog ||
		len(e.BackendPolicies) != 0 || len(e.Listeners) != 1 || e.Listeners[0].Protocol != "TCP" {
		t.Errorf("ELB %+v; want the defaults of a Service without the annotations", e)
	}
	if g, _ := h.fake.Group(e.SecurityGroups[0]); len(g.Rules) != 1 || g.Rules[0].CIDR != "0.0.0.0/0" {
		t.Errorf("own group's rules %v, want port 80 from 0.0.0.0/0", g.Rules)
	}
	w := h.fake.Writes()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nil); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("second sync: %d writes, want 0", d)
	}
}

// Takeover through the SDK at the fake: an upstream NLB made for a Service whose chart renders
// "" for unset annotations and whose ssl-ports has a space ("80, 443": upstream makes 80 TLS and
// reads " 443" as a port name, so 443 stays TCP) is taken over without a change to its
// listeners, target groups or attributes, and the next sync writes nothing.
func TestTakeoverWithUpstreamValueShapes(t *testing.T) {
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	svc := migService(7, true)
	tlsService(svc, 7)
	svc.Annotations[annotations.Prefix+annotations.Backend] = ""
	svc.Annotations[annotations.Prefix+annotations.SSLPorts] = "80, 443"
	for _, s := range []string{annotations.CrossZone, annotations.AccessLog, annotations.SecurityGroup, annotations.ExtraTags, annotations.NodeLabels, annotations.TGAttributes, annotations.SSLPolicy, annotations.HCPath} {
		svc.Annotations[annotations.Prefix+s] = ""
	}
	addr := seedAs(h, migCluster, svc, nodes)
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	protocols := func() map[int]string {
		_, ls, _, ok := h.fake.NLBByName(fakeaws.UpstreamLBName(string(svc.UID)))
		if !ok {
			t.Fatal("no NLB")
		}
		out := map[int]string{}
		for _, l := range ls {
			out[l.Port] = l.Protocol
		}
		return out
	}
	if got := protocols(); got[80] != "TLS" || got[443] != "TCP" {
		t.Fatalf("seeded listeners %v, want upstream's 80 TLS, 443 TCP", got)
	}
	// The first sync adopts (ownership tags, rule descriptions) and changes nothing that serves;
	// the second writes nothing.
	for pass := range 2 {
		w, c0 := h.fake.Writes(), h.fake.Calls()
		if st := ensureOK(t, lb, svc, nodes); st.Ingress[0].Hostname != addr {
			t.Errorf("pass %d: address %s, want upstream's %s", pass, st.Ingress[0].Hostname, addr)
		}
		calls := h.fake.Calls()
		for _, op := range []string{"elbv2:ModifyListener", "elbv2:CreateListener", "elbv2:DeleteListener", "elbv2:CreateTargetGroup",
			"elbv2:ModifyTargetGroup", "elbv2:ModifyLoadBalancerAttributes", "elbv2:ModifyTargetGroupAttributes", "elbv2:CreateLoadBalancer"} {
			if calls[op] != c0[op] {
				t.Errorf("pass %d: %s x%d, want none (upstream's NLB as the annotations mean it)", pass, op, calls[op]-c0[op])
			}
		}
		if d := h.fake.Writes() - w; pass == 1 && d != 0 {
			t.Errorf("second sync: %d writes, want 0", d)
		}
	}
	if got := protocols(); got[80] != "TLS" || got[443] != "TCP" {
		t.Errorf("listeners %v, want upstream's 80 TLS, 443 TCP", got)
	}
}
