package aws

// Behaviour users rely on from the upstream AWS cloud provider (pkg/providers/v1/aws.go and
// aws_loadbalancer.go), checked through the SDK against the fake.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/elbplan"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

func parityNodes(h *harness, names ...string) []*v1.Node {
	var nodes []*v1.Node
	for _, n := range names {
		_, md := h.machine(n)
		nodes = append(nodes, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: v1.NodeSpec{ProviderID: md.ProviderID}})
	}
	return nodes
}

func tcpService(name string, ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: k8stypes.UID("uid-ns-" + name), Annotations: ann},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{
			{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP},
			{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
}

// type external and nlb-ip are the AWS Load Balancer Controller's: ccm steps aside as upstream
// does (ImplementedElsewhere from Ensure and Update, "none" from Get) and touches nothing.
func TestExternalTypesStepAside(t *testing.T) {
	h := newHarness(t, "external")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "ext-a")
	for _, typ := range []string{"external", "nlb-ip"} {
		svc := tcpService("ext-"+strings.ReplaceAll(typ, "-", ""), map[string]string{
			annotations.Prefix + "type": typ, annotations.Prefix + "nlb-target-type": "ip", annotations.Prefix + "scheme": "internal"})
		w, ops := h.fake.Writes(), h.fake.Operations()
		if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); !errors.Is(err, cloudprovider.ImplementedElsewhere) || err != cloudprovider.ImplementedElsewhere {
			t.Errorf("%s: EnsureLoadBalancer %v, want ImplementedElsewhere itself (the service controller compares with ==)", typ, err)
		}
		if err := lb.UpdateLoadBalancer(ctx, "x", svc, nodes); err != cloudprovider.ImplementedElsewhere {
			t.Errorf("%s: UpdateLoadBalancer %v, want ImplementedElsewhere", typ, err)
		}
		if st, exists, err := lb.GetLoadBalancer(ctx, "x", svc); st != nil || exists || err != nil {
			t.Errorf("%s: GetLoadBalancer %v %v %v, want none", typ, st, exists, err)
		}
		after := h.fake.Operations()
		calls := 0
		for op, n := range after {
			calls += n - ops[op]
		}
		if d := h.fake.Writes() - w; d != 0 || calls != 0 {
			t.Errorf("%s: %d writes, %d calls; want none", typ, d, calls)
		}
	}
}

// backend-protocol https or ssl on a port without TLS: a TCP listener with an SSL health
// check, as upstream (buildListener keeps TCP; the health check follows the annotation).
func TestBackendHTTPSWithoutCertAsUpstream(t *testing.T) {
	h := newHarness(t, "backend")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "be-a")
	cert := "arn:aws:acm:us-east-1:1:certificate/x"
	for _, tc := range []struct {
		ann    map[string]string
		want   []fakeaws.Listener
		health string
	}{
		{map[string]string{annotations.Prefix + "backend-protocol": "https"},
			[]fakeaws.Listener{{Protocol: "TCP", InstanceProtocol: "TCP", Port: 443, InstancePort: 30443}, {Protocol: "TCP", InstanceProtocol: "TCP", Port: 80, InstancePort: 30080}}, "SSL:30443"},
		{map[string]string{annotations.Prefix + "backend-protocol": "ssl", annotations.Prefix + "ssl-cert": cert, annotations.Prefix + "ssl-ports": "443"},
			[]fakeaws.Listener{{Protocol: "SSL", InstanceProtocol: "SSL", Port: 443, InstancePort: 30443, SSLCertificateID: cert}, {Protocol: "TCP", InstanceProtocol: "TCP", Port: 80, InstancePort: 30080}}, "SSL:30443"},
		{map[string]string{annotations.Prefix + "backend-protocol": "https", annotations.Prefix + "ssl-cert": cert, annotations.Prefix + "ssl-ports": "https"},
			[]fakeaws.Listener{{Protocol: "HTTPS", InstanceProtocol: "HTTPS", Port: 443, InstancePort: 30443, SSLCertificateID: cert}, {Protocol: "TCP", InstanceProtocol: "TCP", Port: 80, InstancePort: 30080}}, "SSL:30443"},
		{map[string]string{annotations.Prefix + "backend-protocol": "http"},
			[]fakeaws.Listener{{Protocol: "HTTP", InstanceProtocol: "HTTP", Port: 443, InstancePort: 30443}, {Protocol: "HTTP", InstanceProtocol: "HTTP", Port: 80, InstancePort: 30080}}, "TCP:30443"},
		// Values upstream does not know: ignored off the TLS ports; empty is unset on a TLS port.
		{map[string]string{annotations.Prefix + "backend-protocol": "grpc"},
			[]fakeaws.Listener{{Protocol: "TCP", InstanceProtocol: "TCP", Port: 443, InstancePort: 30443}, {Protocol: "TCP", InstanceProtocol: "TCP", Port: 80, InstancePort: 30080}}, "TCP:30443"},
		{map[string]string{annotations.Prefix + "backend-protocol": "h2", annotations.Prefix + "ssl-cert": cert, annotations.Prefix + "ssl-ports": "8443"},
			[]fakeaws.Listener{{Protocol: "TCP", InstanceProtocol: "TCP", Port: 443, InstancePort: 30443}, {Protocol: "TCP", InstanceProtocol: "TCP", Port: 80, InstancePort: 30080}}, "TCP:30443"},
		{map[string]string{annotations.Prefix + "backend-protocol": "", annotations.Prefix + "ssl-cert": cert, annotations.Prefix + "ssl-ports": "443"},
			[]fakeaws.Listener{{Protocol: "SSL", InstanceProtocol: "TCP", Port: 443, InstancePort: 30443, SSLCertificateID: cert}, {Protocol: "TCP", InstanceProtocol: "TCP", Port: 80, InstancePort: 30080}}, "TCP:30443"},
	} {
		svc := tcpService("be", tc.ann)
		if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
			t.Fatal(err)
		}
		e, _ := h.fake.ClassicLB(c.lb.name(svc))
		if !slices.Equal(e.Listeners, tc.want) || e.HealthCheck.Target != tc.health {
			t.Errorf("%v: listeners %v health %s; want %v, %s", tc.ann, e.Listeners, e.HealthCheck.Target, tc.want, tc.health)
		}
		if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
			t.Fatal(err)
		}
	}
}

// The health check of a classic ELB and of an NLB's target groups, by upstream's rules: its
// defaults per type and traffic policy, then the healthcheck-* annotations.
func TestHealthCheckAsUpstream(t *testing.T) {
	h := newHarness(t, "health")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "hc-a")
	local := func(svc *v1.Service) {
		svc.Spec.ExternalTrafficPolicy, svc.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32100
	}
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		local   bool
		classic string // Target Interval/Timeout/Healthy/Unhealthy
		nlb     string // protocol:port:path healthy/unhealthy/interval/timeout
	}{
		{name: "defaults", classic: "TCP:30443 10/5/2/6", nlb: "TCP:traffic-port: 3/3/30/10"},
		{name: "defaults, Local", local: true, classic: "HTTP:32100/healthz 10/5/2/6", nlb: "HTTP:32100:/healthz 2/2/10/10"},
		{name: "protocol http", ann: map[string]string{"healthcheck-protocol": "http"}, classic: "HTTP:30443/ 10/5/2/6", nlb: "HTTP:traffic-port:/ 3/3/30/10"},
		{name: "all set", ann: map[string]string{"healthcheck-protocol": "HTTPS", "healthcheck-port": "30080", "healthcheck-path": "/ready",
			"healthcheck-interval": "20", "healthcheck-timeout": "6", "healthcheck-healthy-threshold": "4", "healthcheck-unhealthy-threshold": "5"},
			classic: "HTTPS:30080/ready 20/6/4/5", nlb: "HTTPS:30080:/ready 4/5/20/6"},
		{name: "traffic-port, Local", local: true, ann: map[string]string{"healthcheck-port": "traffic-port"}, classic: "HTTP:30443/healthz 10/5/2/6", nlb: "HTTP:traffic-port:/healthz 2/2/10/10"},
		{name: "tcp, Local", local: true, ann: map[string]string{"healthcheck-protocol": "TCP", "healthcheck-path": "/ignored"}, classic: "TCP:32100 10/5/2/6", nlb: "TCP:32100: 2/2/10/10"},
	} {
		for _, nlb := range []bool{false, true} {
			ann := map[string]string{}
			for k, v := range tc.ann {
				ann[annotations.Prefix+k] = v
			}
			if nlb {
				ann[annotations.Prefix+"type"] = "nlb"
			}
			svc := tcpService("hc", ann)
			if tc.local {
				local(svc)
			}
			if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
				t.Fatalf("%s (nlb %v): %v", tc.name, nlb, err)
			}
			var got, want string
			if nlb {
				_, _, tgs, _ := h.fake.NLBByName(c.lb.name(svc))
				got = fmt.Sprintf("%s:%s:%s %s", tgs[0].HealthProtocol, tgs[0].HealthPort, tgs[0].HealthPath, tgs[0].HealthThresholds)
				want = tc.nlb
			} else {
				e, _ := h.fake.ClassicLB(c.lb.name(svc))
				hc := e.HealthCheck
				got = fmt.Sprintf("%s %d/%d/%d/%d", hc.Target, hc.Interval, hc.Timeout, hc.Healthy, hc.Unhealthy)
				want = tc.classic
			}
			if got != want {
				t.Errorf("%s (nlb %v): health check %s, want %s", tc.name, nlb, got, want)
			}
			// A second sync (a restart) writes nothing.
			w := h.fake.Writes()
			lb2, _ := h.cloud(t, "").LoadBalancer()
			if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
				t.Fatal(err)
			}
			if d := h.fake.Writes() - w; d != 0 {
				t.Errorf("%s (nlb %v): restart wrote %d times", tc.name, nlb, d)
			}
			if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A changed health check timing is one ModifyTargetGroup per target group.
func TestNLBHealthTimingsReconciled(t *testing.T) {
	h := newHarness(t, "nlbhc")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "nh-a")
	svc := tcpService("nh", map[string]string{annotations.Prefix + "type": "nlb"})
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	svc.Annotations[annotations.Prefix+"healthcheck-interval"] = "10"
	before := h.fake.Operations()["elbv2:ModifyTargetGroup"]
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	_, _, tgs, _ := h.fake.NLBByName(c.lb.name(svc))
	if d := h.fake.Operations()["elbv2:ModifyTargetGroup"] - before; d != 2 || tgs[0].HealthThresholds != "3/3/10/10" || tgs[1].HealthThresholds != "3/3/10/10" {
		t.Errorf("interval changed: ModifyTargetGroup +%d, thresholds %s %s; want +2, 3/3/10/10", d, tgs[0].HealthThresholds, tgs[1].HealthThresholds)
	}
}

// The classic ELB settings users rely on: idle timeout, connection draining, access logs,
// extra security groups and the SSL negotiation policy. Each is written only when the ELB
// differs; a restart writes nothing; a bad value is an error naming the annotation.
func TestClassicELBSettingsAsUpstream(t *testing.T) {
	h := newHarness(t, "settings")
	ctx := context.Background()
	extra := h.fake.AddSecurityGroup("extra", "extra group", nil)
	c := h.cloud(t, "[Global]\nAllowedResourceIDs = "+extra+"\n")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "st-a")
	cert := "arn:aws:acm:us-east-1:1:certificate/x"
	svc := tcpService("st", map[string]string{
		annotations.Prefix + "connection-idle-timeout":     "300",
		annotations.Prefix + "connection-draining-enabled": "true",
		annotations.Prefix + "connection-draining-timeout": "45",
		annotations.Prefix + "access-log-enabled":          "true",
		annotations.Prefix + "access-log-emit-interval":    "5",
		annotations.Prefix + "access-log-s3-bucket-name":   "logs",
		annotations.Prefix + "access-log-s3-bucket-prefix": "elb/st",
		annotations.Prefix + "extra-security-groups":       extra,
		annotations.Prefix + "ssl-cert":                    cert,
		annotations.Prefix + "ssl-ports":                   "443",
		annotations.Prefix + "ssl-negotiation-policy":      "ELBSecurityPolicy-TLS-1-2-2017-01",
	})
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	e, _ := h.fake.ClassicLB(c.lb.name(svc))
	want := fakeaws.ELBAttributes{IdleTimeout: 300, Draining: true, DrainingTimeout: 45, AccessLog: true, EmitInterval: 5, S3BucketName: "logs", S3BucketPrefix: "elb/st"}
	if e.Attributes != want {
		t.Errorf("attributes %+v, want %+v", e.Attributes, want)
	}
	if len(e.SecurityGroups) != 2 || e.SecurityGroups[1] != extra {
		t.Errorf("security groups %v, want the ELB's own and %s", e.SecurityGroups, extra)
	}
	pol := elbplan.SSLPolicyName("ELBSecurityPolicy-TLS-1-2-2017-01")
	if p, ok := e.Policies[pol]; !ok || p.Type != "SSLNegotiationPolicyType" || p.Attributes["Reference-Security-Policy"] != "ELBSecurityPolicy-TLS-1-2-2017-01" ||
		!slices.Equal(e.ListenerPolicies[443], []string{pol}) || len(e.ListenerPolicies[80]) != 0 {
		t.Errorf("policies %v, listener policies %v; want %s on the SSL listener only", e.Policies, e.ListenerPolicies, pol)
	}
	w := h.fake.Writes()
	lb2, _ := h.cloud(t, "[Global]\nAllowedResourceIDs = "+extra+"\n").LoadBalancer()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("restart: %d writes, want 0", d)
	}
	// Changed out of band: one ModifyLoadBalancerAttributes puts it back, with a drift Event.
	op := h.operator()
	if _, err := op.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String(c.lb.name(svc)),
		LoadBalancerAttributes: &elbtypes.LoadBalancerAttributes{ConnectionSettings: &elbtypes.ConnectionSettings{IdleTimeout: aws.Int32(60)}}}); err != nil {
		t.Fatal(err)
	}
	w = h.fake.Writes()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if e, _ = h.fake.ClassicLB(c.lb.name(svc)); h.fake.Writes()-w != 1 || e.Attributes != want {
		t.Errorf("idle timeout changed out of band: %d writes, attributes %+v; want 1, %+v", h.fake.Writes()-w, e.Attributes, want)
	}
	if ok, evs := h.events.Await(svc, 5*time.Second, "LoadBalancerDriftRepaired", "idle timeout was 60s"); !ok {
		t.Errorf("no drift Event: %v", evs)
	}
	// Annotations removed: upstream's defaults (60s, no draining, no logs), the extra group
	// detached; the SSL policy stays (upstream leaves it).
	for _, k := range []string{"connection-idle-timeout", "connection-draining-enabled", "connection-draining-timeout", "access-log-enabled", "access-log-emit-interval",
		"access-log-s3-bucket-name", "access-log-s3-bucket-prefix", "extra-security-groups"} {
		delete(svc.Annotations, annotations.Prefix+k)
	}
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	e, _ = h.fake.ClassicLB(c.lb.name(svc))
	if a := e.Attributes; a.IdleTimeout != 60 || a.Draining || a.AccessLog || len(e.SecurityGroups) != 1 {
		t.Errorf("annotations removed: attributes %+v, groups %v; want 60s, off, off, one group", a, e.SecurityGroups)
	}
	// Bad values: refused before any write, naming the annotation and the value.
	for k, v := range map[string]string{"connection-idle-timeout": "0", "connection-draining-timeout": "1h", "access-log-emit-interval": "10",
		"ssl-negotiation-policy": "NoSuchPolicy", "extra-security-groups": "sg-404"} {
		bad := tcpService("st", maps.Clone(svc.Annotations))
		bad.Annotations[annotations.Prefix+k] = v
		w := h.fake.Writes()
		_, err := lb2.EnsureLoadBalancer(ctx, "x", bad, nodes)
		if err == nil || !strings.Contains(err.Error(), annotations.Prefix+k) {
			t.Errorf("%s=%q: %v, want an error naming the annotation", k, v, err)
		}
		if k != "ssl-negotiation-policy" && h.fake.Writes() != w {
			t.Errorf("%s=%q: %d writes before the refusal", k, v, h.fake.Writes()-w)
		}
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
}

// NLB attributes (cross-zone, access logs) and addresses (Elastic IPs at creation), as
// upstream: written only when they differ, drift repaired, a bad count refused by name.
func TestNLBAttributesAndAddresses(t *testing.T) {
	h := newHarness(t, "nlbattrs")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "na-a")
	svc := tcpService("na", map[string]string{annotations.Prefix + "type": "nlb",
		annotations.Prefix + "cross-zone-load-balancing-enabled": "true",
		annotations.Prefix + "access-log-enabled":                "true",
		annotations.Prefix + "access-log-s3-bucket-name":         "logs",
		annotations.Prefix + "access-log-s3-bucket-prefix":       "nlb",
		annotations.Prefix + "eip-allocations":                   "eipalloc-1,eipalloc-2",
	})
	// The NLB gets one public subnet per zone, three: two allocations are refused.
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err == nil || !strings.Contains(err.Error(), annotations.Prefix+"eip-allocations") {
		t.Fatalf("2 allocations for 3 subnets: %v, want an error naming the annotation", err)
	}
	if _, _, _, ok := h.fake.NLBByName(c.lb.name(svc)); ok {
		t.Fatal("an NLB was created despite the refusal")
	}
	// One per zone, as the public subnets; the operator tagged them for the Service.
	var allocs []string
	for range 3 {
		allocs = append(allocs, h.fake.AddAddress(ownership.Of("nlbattrs", svc).Tags()))
	}

	svc.Annotations[annotations.Prefix+"eip-allocations"] = strings.Join(allocs, ",")
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	n, _, _, _ := h.fake.NLBByName(c.lb.name(svc))
	if n.Attributes["load_balancing.cross_zone.enabled"] != "true" || n.Attributes["access_logs.s3.enabled"] != "true" ||
		n.Attributes["access_logs.s3.bucket"] != "logs" || n.Attributes["access_logs.s3.prefix"] != "nlb" {
		t.Errorf("attributes %v", n.Attributes)
	}
	var got []string
	for _, sn := range n.Subnets {
		got = append(got, n.Addresses[sn])
	}
	if !sameSet(got, allocs) {
		t.Errorf("addresses %v, want %v", got, allocs)
	}
	w := h.fake.Writes()
	lb2, _ := h.cloud(t, "").LoadBalancer()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("restart: %d writes, want 0", d)
	}
	// Cross-zone off by hand: one write puts it back.
	op := h.operator()
	if _, err := op.elbv2.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(n.ARN),
		Attributes: []v2types.LoadBalancerAttribute{{Key: aws.String("load_balancing.cross_zone.enabled"), Value: aws.String("false")}}}); err != nil {
		t.Fatal(err)
	}
	w = h.fake.Writes()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if n, _, _, _ = h.fake.NLBByName(c.lb.name(svc)); h.fake.Writes()-w != 1 || n.Attributes["load_balancing.cross_zone.enabled"] != "true" {
		t.Errorf("cross-zone turned off by hand: %d writes, %v; want 1, true", h.fake.Writes()-w, n.Attributes)
	}
	// Annotations removed: upstream's defaults (off); the bucket stays (ELBv2 keeps it).
	for _, k := range []string{"cross-zone-load-balancing-enabled", "access-log-enabled", "access-log-s3-bucket-name", "access-log-s3-bucket-prefix"} {
		delete(svc.Annotations, annotations.Prefix+k)
	}
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if n, _, _, _ = h.fake.NLBByName(c.lb.name(svc)); n.Attributes["load_balancing.cross_zone.enabled"] != "false" || n.Attributes["access_logs.s3.enabled"] != "false" {
		t.Errorf("annotations removed: %v", n.Attributes)
	}
	// Other allocations named later: AWS cannot change them; one Warning says so, nothing is written.
	svc.Annotations[annotations.Prefix+"eip-allocations"] = strings.ReplaceAll(strings.Join(allocs, ","), "eipalloc-", "eipalloc-9")
	w = h.fake.Writes()
	if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("allocations changed: %d writes, want 0", d)
	}
	if ok, evs := h.events.Await(svc, 5*time.Second, "UnsupportedAnnotation", "recreate the Service"); !ok {
		t.Errorf("no Warning about the addresses: %v", evs)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
}

// ssl-negotiation-policy on an NLB: the SslPolicy of its TLS listeners, set at creation and
// changed in place (ModifyListener), as upstream; a policy ELB does not know is refused by name.
func TestNLBSSLPolicy(t *testing.T) {
	h := newHarness(t, "nlbssl")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "ns-a")
	svc := tcpService("ns", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + "ssl-cert": "arn:aws:acm:us-east-1:1:certificate/x",
		annotations.Prefix + "ssl-ports": "443", annotations.Prefix + "ssl-negotiation-policy": "ELBSecurityPolicy-TLS-1-2-2017-01"})
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	policies := func() map[int]string {
		_, ls, _, _ := h.fake.NLBByName(c.lb.name(svc))
		out := map[int]string{}
		for _, l := range ls {
			out[l.Port] = l.Protocol + " " + l.SSLPolicy
		}
		return out
	}
	if got := policies(); got[443] != "TLS ELBSecurityPolicy-TLS-1-2-2017-01" || got[80] != "TCP " {
		t.Errorf("listeners %v", got)
	}
	svc.Annotations[annotations.Prefix+"ssl-negotiation-policy"] = "ELBSecurityPolicy-TLS13-1-2-2021-06"
	ops := h.fake.Operations()
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
		t.Fatal(err)
	}
	after := h.fake.Operations()
	if got := policies(); got[443] != "TLS ELBSecurityPolicy-TLS13-1-2-2021-06" || after["elbv2:ModifyListener"]-ops["elbv2:ModifyListener"] != 1 ||
		after["elbv2:DeleteListener"] != ops["elbv2:DeleteListener"] {
		t.Errorf("policy changed: listeners %v, ModifyListener +%d, DeleteListener +%d; want in place, one call", got,
			after["elbv2:ModifyListener"]-ops["elbv2:ModifyListener"], after["elbv2:DeleteListener"]-ops["elbv2:DeleteListener"])
	}
	svc.Annotations[annotations.Prefix+"ssl-negotiation-policy"] = "NoSuchPolicy"
	if _, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes); err == nil || !strings.Contains(err.Error(), annotations.Prefix+"ssl-negotiation-policy") {
		t.Errorf("unknown policy: %v, want an error naming the annotation", err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
		t.Fatal(err)
	}
}

// acceptedCases are Services whose annotations upstream accepts and ccm refused before: the AWS
// Load Balancer Controller's annotations, ssl-ports without ssl-cert, a type other than "nlb"
// (a classic ELB), kubernetes.io/ tags, a backend protocol not in lower case. Each is
// reconciled, with the Warning (UnsupportedAnnotation) holding warn ("" : no Warning at all).
var acceptedCases = []struct {
	name string
	ann  map[string]string
	nlb  bool
	warn []string
}{
	{"lbc", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + "nlb-target-type": "instance",
		annotations.Prefix + "scheme": "internet-facing", annotations.Prefix + "name": "my-nlb"}, true,
		[]string{annotations.Prefix + "nlb-target-type is not read", annotations.Prefix + "scheme is not read", annotations.Prefix + "name is not read"}},
	{"lbc-internal", map[string]string{annotations.Prefix + "scheme": "internal"}, false,
		[]string{annotations.Prefix + "scheme is not read", "internet-facing: write " + annotations.Prefix + "internal"}},
	{"sslports", map[string]string{annotations.Prefix + "ssl-ports": "443"}, false,
		[]string{annotations.Prefix + "ssl-ports has no effect without " + annotations.Prefix + "ssl-cert"}},
	{"type-nlb-upper", map[string]string{annotations.Prefix + "type": "NLB"}, false, []string{annotations.Prefix + `type "NLB": a classic ELB is made`}},
	{"type-elb", map[string]string{annotations.Prefix + "type": "elb"}, false, []string{annotations.Prefix + `type "elb": a classic ELB is made`}},
	{"type-classic", map[string]string{annotations.Prefix + "type": "Classic"}, false, nil},
	{"k8s-tags", map[string]string{annotations.Prefix + "additional-resource-tags": "kubernetes.io/created-for/pvc/name=data,team=a"}, false, nil},
	{"k8s-tags-nlb", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + "additional-resource-tags": "k8s.io/cluster-autoscaler/enabled=true"}, true, nil},
	{"backend-http-upper", map[string]string{annotations.Prefix + "backend-protocol": "HTTP"}, false,
		[]string{annotations.Prefix + `backend-protocol "HTTP" is read case-sensitively`, "the listeners are TCP"}},
	{"backend-https-upper", map[string]string{annotations.Prefix + "backend-protocol": "HTTPS"}, false,
		[]string{annotations.Prefix + `backend-protocol "HTTPS" is read case-sensitively`}},
	// A value upstream does not know is ignored where it does not refuse it (no TLS port).
	{"backend-grpc", map[string]string{annotations.Prefix + "backend-protocol": "grpc"}, false,
		[]string{annotations.Prefix + `backend-protocol "grpc" is not http, https, ssl or tcp and is ignored`, "listeners and health check are TCP"}},
	{"backend-tls-nlb", map[string]string{annotations.Prefix + "type": "nlb", annotations.Prefix + "backend-protocol": "TLS",
		annotations.Prefix + "ssl-cert": "arn:aws:acm:us-east-1:1:certificate/x", annotations.Prefix + "ssl-ports": "443"}, true,
		[]string{annotations.Prefix + `backend-protocol "TLS" is not http, https, ssl or tcp and is ignored`, "target groups and health checks are TCP"}},
	{"backend-empty", map[string]string{annotations.Prefix + "backend-protocol": ""}, false, nil},
}

// checkAccepted checks svc's Events for case i: its Warning, or none.
func checkAccepted(t *testing.T, h *harness, svc *v1.Service, warn []string) {
	t.Helper()
	if len(warn) == 0 {
		time.Sleep(50 * time.Millisecond) // the broadcaster delivers asynchronously
		for _, e := range h.events.On(svc) {
			if strings.HasPrefix(e, v1.EventTypeWarning) {
				t.Errorf("%s: unexpected %s", svc.Name, e)
			}
		}
		return
	}
	if ok, evs := h.events.Await(svc, 5*time.Second, append([]string{"Warning UnsupportedAnnotation"}, warn...)...); !ok {
		t.Errorf("%s: events %q lack one Warning with %q", svc.Name, evs, warn)
	}
}

// Annotations upstream accepts are accepted: through the SDK against the fake, each Service's
// load balancer is made as upstream makes it (type, listeners, health check, tags), with the
// Warning; a restart writes nothing; the delete removes it.
func TestUpstreamAcceptedAnnotationsReconciled(t *testing.T) {
	h := newHarness(t, "accept")
	ctx := context.Background()
	c := h.cloud(t, "")
	lb, _ := c.LoadBalancer()
	nodes := parityNodes(h, "acc-a")
	tcpTCP := []fakeaws.Listener{{Protocol: "TCP", InstanceProtocol: "TCP", Port: 443, InstancePort: 30443}, {Protocol: "TCP", InstanceProtocol: "TCP", Port: 80, InstancePort: 30080}}
	var svcs []*v1.Service
	for _, tc := range acceptedCases {
		svc := tcpService(tc.name, tc.ann)
		svcs = append(svcs, svc)
		st, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		name := c.lb.name(svc)
		e, classic := h.fake.ClassicLB(name)
		n, _, tgs, isNLB := h.fake.NLBByName(name)
		if classic == tc.nlb || isNLB != tc.nlb || len(st.Ingress) != 1 {
			t.Errorf("%s: classic ELB %v, NLB %v, status %v; want NLB %v", tc.name, classic, isNLB, st, tc.nlb)
			continue
		}
		switch tc.name {
		case "sslports", "type-nlb-upper", "type-elb", "type-classic", "lbc-internal", "backend-http-upper":
			if !slices.Equal(e.Listeners, tcpTCP) || e.HealthCheck.Target != "TCP:30443" || e.Scheme != "internet-facing" {
				t.Errorf("%s: listeners %v health %s scheme %s; want upstream's TCP:TCP, TCP:30443, internet-facing", tc.name, e.Listeners, e.HealthCheck.Target, e.Scheme)
			}
		case "backend-https-upper":
			if !slices.Equal(e.Listeners, tcpTCP) || e.HealthCheck.Target != "SSL:30443" {
				t.Errorf("%s: listeners %v health %s; want upstream's TCP:TCP, SSL:30443", tc.name, e.Listeners, e.HealthCheck.Target)
			}
		case "k8s-tags":
			if e.Tags["kubernetes.io/created-for/pvc/name"] != "data" || e.Tags["team"] != "a" || e.Tags["kubernetes.io/cluster/accept"] != "owned" {
				t.Errorf("%s: tags %v", tc.name, e.Tags)
			}
		case "k8s-tags-nlb":
			if n.Tags["k8s.io/cluster-autoscaler/enabled"] != "true" || n.Tags["kubernetes.io/cluster/accept"] != "owned" || len(tgs) != 2 {
				t.Errorf("%s: tags %v, %d target groups", tc.name, n.Tags, len(tgs))
			}
		}
		checkAccepted(t, h, svc, tc.warn)
	}
	w := h.fake.Writes()
	lb2, _ := h.cloud(t, "").LoadBalancer()
	for _, svc := range svcs {
		if _, err := lb2.EnsureLoadBalancer(ctx, "x", svc, nodes); err != nil {
			t.Errorf("%s after a restart: %v", svc.Name, err)
		}
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("restart: %d writes, want 0", d)
	}
	for _, svc := range svcs {
		if err := lb2.EnsureLoadBalancerDeleted(ctx, "x", svc); err != nil {
			t.Errorf("%s: delete: %v", svc.Name, err)
		}
		if _, ok := h.fake.ClassicLB(c.lb.name(svc)); ok {
			t.Errorf("%s: ELB left after the delete", svc.Name)
		}
		if _, _, _, ok := h.fake.NLBByName(c.lb.name(svc)); ok {
			t.Errorf("%s: NLB left after the delete", svc.Name)
		}
	}
}

// The same Services as the upstream CCM left them (its classic ELB for every type but "nlb",
// its NLB for "nlb"): ccm takes each over in place, 0 creates and 0 deletes of serving
// resources, the DNS name kept, the Warning recorded; a restart writes nothing.
func TestUpstreamTakeoverAcceptedAnnotations(t *testing.T) {
	h := newHarness(t, migCluster)
	nodes := migNodes(h)
	var svcs []*v1.Service
	var addrs []string
	for i, tc := range acceptedCases {
		svc := migService(i, false)
		maps.Copy(svc.Annotations, tc.ann)
		addrs = append(addrs, seedAs(h, migCluster, svc, nodes))
		svcs = append(svcs, svc)
	}
	lb, _ := h.cloud(t, "").LoadBalancer()
	for i, svc := range svcs {
		st := ensureOK(t, lb, svc, nodes)
		if got := st.Ingress[0].Hostname; got != addrs[i] {
			t.Errorf("%s (%s): address %s, want upstream's %s", svc.Name, acceptedCases[i].name, got, addrs[i])
		}
		checkAccepted(t, h, svc, acceptedCases[i].warn)
	}
	if c, d := servingChanges(h.fake.Calls()); c != 0 || d != 0 {
		t.Errorf("takeover: %d load balancer creates, %d deletes of serving resources, want 0 and 0", c, d)
	}
	w := h.fake.Writes()
	lb2, _ := h.cloud(t, "").LoadBalancer()
	for _, svc := range svcs {
		ensureOK(t, lb2, svc, nodes)
	}
	if d := h.fake.Writes() - w; d != 0 {
		t.Errorf("restart after the takeover: %d writes, want 0", d)
	}
}
