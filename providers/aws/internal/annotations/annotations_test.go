package annotations

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/ownership"
)

func svcWith(ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", Annotations: ann},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP}, {Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
}

func TestAnnotationsRejectedNameTheAnnotation(t *testing.T) {
	for ann, val := range map[string]string{
		"proxy-protocol": "v2", "connection-idle-timeout": "0", "access-log-emit-interval": "30",
		"healthcheck-protocol": "UDP", "healthcheck-port": "http", "healthcheck-path": "healthz", "ssl-negotiation-policy": "a policy",
		"connection-draining-enabled": "yes",
		"healthcheck-interval":        "1", "security-groups": "default",
		"additional-resource-tags": "kubernetes.io/cluster/x=owned",
	} {
		_, err := Parse(svcWith(map[string]string{Prefix + ann: val}))
		if err == nil || !strings.Contains(err.Error(), Prefix+ann) {
			t.Errorf("%s=%q: error %v does not name the annotation", ann, val, err)
		}
	}
	for ann, val := range map[string]string{"healthcheck-protocol": "SSL", "healthcheck-timeout": "121", "target-group-attributes": "a"} {
		_, err := Parse(svcWith(map[string]string{Prefix + "type": "nlb", Prefix + ann: val}))
		if err == nil || !strings.Contains(err.Error(), Prefix+ann) {
			t.Errorf("nlb with %s: error %v does not name the annotation", ann, err)
		}
	}
	udp := svcWith(nil)
	udp.Spec.Ports[0].Protocol = v1.ProtocolUDP
	if _, err := Parse(udp); err == nil || !strings.Contains(err.Error(), "UDP") {
		t.Errorf("UDP port accepted: %v", err)
	}
}

func TestAnnotationsParsed(t *testing.T) {
	o, err := Parse(svcWith(map[string]string{
		Prefix + "internal":                 "true",
		Prefix + "ssl-cert":                 "arn:aws:acm:us-east-1:1:certificate/x",
		Prefix + "ssl-ports":                "https",
		Prefix + "backend-protocol":         "http",
		Prefix + "additional-resource-tags": "team=a, cost=b",
		Prefix + "target-node-labels":       "pool=web",
		Prefix + "healthcheck-interval":     "20",
		Prefix + "proxy-protocol":           "*",
	}))
	if err != nil {
		t.Fatal(err)
	}
	svc := svcWith(nil)
	if !o.Internal || !o.SSLPort(svc.Spec.Ports[0]) || o.SSLPort(svc.Spec.Ports[1]) || o.ExtraTags["cost"] != "b" || o.HC.Interval != 20 || !o.ProxyProtocol {
		t.Errorf("options %+v", o)
	}
	if !o.NodeLabels.Selects(map[string]string{"pool": "web"}) || o.NodeLabels.Selects(map[string]string{"pool": "db"}) {
		t.Error("target-node-labels selector wrong")
	}
}

// Upstream: any value of internal but "false" (or none) is internal.
func TestInternalAsUpstream(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "0.0.0.0/0": true, "yes": true, "false": false, "": false, "False": true} {
		o, err := Parse(svcWith(map[string]string{Prefix + "internal": v}))
		if err != nil || o.Internal != want {
			t.Errorf("internal=%q: internal %v, %v; want %v", v, o != nil && o.Internal, err, want)
		}
	}
}

// Annotations upstream reads for the other load balancer type are advice, not errors.
func TestAnnotationsForTheOtherTypeAdvised(t *testing.T) {
	nlb := map[string]string{Prefix + "type": "nlb"}
	// security-groups is read for an NLB (used in NLBSecurityGroupMode = Managed, else advised:
	// nlbplan.PlanSecurityGroups), parsed as for a classic ELB; an empty list is none, as
	// upstream reads it.
	o, err := Parse(svcWith(map[string]string{Prefix + "type": "nlb", Prefix + "security-groups": " sg-1 , sg-2 "}))
	if err != nil || len(o.Advice) != 0 || !slices.Equal(o.SecurityGroups, []string{"sg-1", "sg-2"}) {
		t.Errorf("nlb with security-groups: %v, %+v; want [sg-1 sg-2], no advice", err, o)
	}
	if o, err := Parse(svcWith(map[string]string{Prefix + "type": "nlb", Prefix + "security-groups": ""})); err != nil || len(o.SecurityGroups) != 0 {
		t.Errorf("nlb with an empty security-groups: %v, %+v; want none, no error", err, o)
	}
	// Not a group ID: refused only in Managed mode (ensureNLB), else ignored as upstream does.
	if o, err := Parse(svcWith(map[string]string{Prefix + "type": "nlb", Prefix + "security-groups": "default"})); err != nil || o.NLBGroupIDErr == nil || !strings.Contains(o.NLBGroupIDErr.Error(), Prefix+"security-groups") {
		t.Errorf("nlb with security-groups default: %v, %+v; want no error, one kept for Managed mode naming the annotation", err, o)
	}
	for _, ann := range []string{"extra-security-groups", "proxy-protocol", "connection-idle-timeout", "connection-draining-enabled", "connection-draining-timeout", "access-log-emit-interval"} {
		a := maps.Clone(nlb)
		a[Prefix+ann] = map[string]string{"security-groups": "sg-1", "extra-security-groups": "sg-2", "proxy-protocol": "*", "connection-draining-enabled": "true", "access-log-emit-interval": "5"}[ann]
		if a[Prefix+ann] == "" {
			a[Prefix+ann] = "30"
		}
		o, err := Parse(svcWith(a))
		if err != nil || len(o.Advice) != 1 || !strings.Contains(o.Advice[0], Prefix+ann) {
			t.Errorf("nlb with %s: %v, advice %v; want one advice naming it", ann, err, o)
		}
	}
	// backend-protocol ssl on an NLB with a certificate: TLS target groups, no advice; upstream
	// reads only "ssl" as written, so "SSL" keeps them TCP and says so.
	o, err = Parse(svcWith(map[string]string{Prefix + "type": "nlb", Prefix + "backend-protocol": "ssl", Prefix + "ssl-cert": "arn:aws:acm:us-east-1:1:certificate/x"}))
	if err != nil || len(o.Advice) != 0 || !o.TLSBackend {
		t.Errorf("nlb with backend-protocol ssl: %v, advice %v, TLS backend %v; want TLS, no advice", err, o.Advice, o.TLSBackend)
	}
	o, err = Parse(svcWith(map[string]string{Prefix + "type": "nlb", Prefix + "backend-protocol": "SSL", Prefix + "ssl-cert": "arn:aws:acm:us-east-1:1:certificate/x"}))
	if err != nil || len(o.Advice) != 1 || !strings.Contains(o.Advice[0], Prefix+"backend-protocol") || o.TLSBackend {
		t.Errorf("nlb with backend-protocol SSL: %v, advice %v, TLS backend %v; want TCP and one advice naming it", err, o.Advice, o.TLSBackend)
	}
	for _, ann := range []string{"target-group-attributes", "eip-allocations", "private-ipv4-addresses"} {
		o, err := Parse(svcWith(map[string]string{Prefix + ann: "x"}))
		if err != nil || len(o.Advice) != 1 || !strings.Contains(o.Advice[0], Prefix+ann) {
			t.Errorf("classic with %s: %v, advice %v; want one advice naming it", ann, err, o)
		}
	}
}

// The annotation list is upstream's, neither more nor less (upstream's aws.go constants).
func TestSupportedAreUpstreams(t *testing.T) {
	upstream := []string{"type", "internal", "proxy-protocol", "access-log-emit-interval", "access-log-enabled", "access-log-s3-bucket-name",
		"access-log-s3-bucket-prefix", "connection-draining-enabled", "connection-draining-timeout", "connection-idle-timeout",
		"cross-zone-load-balancing-enabled", "extra-security-groups", "security-groups", "ssl-cert", "ssl-ports", "ssl-negotiation-policy",
		"backend-protocol", "additional-resource-tags", "healthcheck-protocol", "healthcheck-port", "healthcheck-path",
		"healthcheck-healthy-threshold", "healthcheck-unhealthy-threshold", "healthcheck-timeout", "healthcheck-interval",
		"target-group-attributes", "eip-allocations", "private-ipv4-addresses", "target-node-labels", "subnets"}
	if !slices.Equal(slices.Sorted(slices.Values(upstream)), slices.Sorted(slices.Values(Supported))) {
		t.Errorf("supported %v, upstream %v", Supported, upstream)
	}
}

// Source ranges are read by common/sourceranges, upstream's rule: the spec field, else the
// legacy annotation; IPv4 with leading zeros parses as upstream's ParseCIDRSloppy does; none
// is every IPv4 client; an empty item of the annotation is refused naming it.
func TestSourceRangesAsUpstream(t *testing.T) {
	spec := svcWith(nil)
	spec.Spec.LoadBalancerSourceRanges = []string{"010.001.0.0/16", " 2001:db8::1/32", "192.0.2.0/24"}
	got, err := parseSourceRanges(spec)
	if err != nil || !slices.Equal(got, []string{"10.1.0.0/16", "192.0.2.0/24", "2001:db8::/32"}) {
		t.Errorf("spec: %v, %v", got, err)
	}
	legacy := svcWith(map[string]string{SourceRanges: "10.0.0.0/8, 172.16.0.0/12"})
	if got, err := parseSourceRanges(legacy); err != nil || !slices.Equal(got, []string{"10.0.0.0/8", "172.16.0.0/12"}) {
		t.Errorf("legacy annotation: %v, %v", got, err)
	}
	if got, err := parseSourceRanges(svcWith(nil)); err != nil || !slices.Equal(got, []string{"0.0.0.0/0"}) {
		t.Errorf("none: %v, %v", got, err)
	}
	if _, err := parseSourceRanges(svcWith(map[string]string{SourceRanges: "10.0.0.0/8,,"})); err == nil || !strings.Contains(err.Error(), SourceRanges) {
		t.Errorf("empty item: %v, want an error naming the annotation", err)
	}
}

// advised reports whether o holds exactly one piece of advice, naming annotation suffix and
// containing want.
func advised(o *Options, suffix, want string) bool {
	return o != nil && len(o.Advice) == 1 && strings.Contains(o.Advice[0], Prefix+suffix) && strings.Contains(o.Advice[0], want)
}

// An annotation with the provider's prefix that neither ccm nor upstream reads is ignored, as
// upstream ignores it, with one Warning naming it; the rest of the Service is read as without
// it. The AWS Load Balancer Controller's annotations (its documented names, on Services this
// provider serves) and typos alike; its scheme "internal" says the load balancer is not.
func TestUnknownAnnotationsAdvised(t *testing.T) {
	for _, tc := range []struct {
		suffix, value, want string
	}{
		{"nlb-target-type", "ip", "AWS Load Balancer Controller"},
		{"nlb-target-type", "instance", "AWS Load Balancer Controller"},
		{"scheme", "internal", "internet-facing: write " + Prefix + "internal"},
		{"scheme", "internet-facing", "AWS Load Balancer Controller"},
		{"name", "my-nlb", "AWS Load Balancer Controller"},
		{"ip-address-type", "dualstack", "AWS Load Balancer Controller"},
		{"healthcheck-success-codes", "200-399", "AWS Load Balancer Controller"},
		{"healthcheck-intervall", "20", "is not read by ccm or by the upstream AWS cloud provider and is ignored"},
		{"backend-protocl", "http", "is ignored"},
		{"Internal", "true", "is ignored"}, // names are case-sensitive, upstream's too
		{"", "x", "is ignored"},
	} {
		for _, nlb := range []bool{false, true} {
			ann := map[string]string{Prefix + tc.suffix: tc.value, Prefix + "healthcheck-interval": "20"}
			if nlb {
				ann[Prefix+"type"] = "nlb"
			}
			o, err := Parse(svcWith(ann))
			if err != nil || !advised(o, tc.suffix, tc.want) {
				t.Errorf("%s=%q (nlb %v): %v, advice %v; want one naming it with %q", tc.suffix, tc.value, nlb, err, o, tc.want)
				continue
			}
			if o.NLB != nlb || o.HC.Interval != 20 || o.Internal {
				t.Errorf("%s=%q (nlb %v): the other annotations not read as without it: %+v", tc.suffix, tc.value, nlb, o)
			}
		}
	}
	// Several: one Warning (the advice is joined) naming each.
	o, err := Parse(svcWith(map[string]string{Prefix + "type": "nlb", Prefix + "nlb-target-type": "ip", Prefix + "name": "x"}))
	if err != nil || len(o.Advice) != 2 || !strings.Contains(strings.Join(o.Advice, "; "), Prefix+"name ") {
		t.Errorf("two unknown annotations: %v, advice %v", err, o)
	}
}

// aws-load-balancer-type as upstream reads it: exactly "nlb" is an NLB, every other value (its
// case variants, "elb", "classic", a typo) a classic ELB; values other than none and classic
// (in any case) get a Warning saying so. external and nlb-ip step aside before parsing (see
// TestExternalTypesStepAside).
func TestTypeAsUpstream(t *testing.T) {
	for v, want := range map[string]struct{ nlb, advised bool }{
		"": {false, false}, "classic": {false, false}, "Classic": {false, false}, "CLASSIC": {false, false},
		"nlb": {true, false},
		"NLB": {false, true}, "Nlb": {false, true}, " nlb": {false, true}, "nlb ": {false, true},
		"elb": {false, true}, "ELB": {false, true}, "clb": {false, true}, "alb": {false, true}, "network": {false, true},
		"External": {false, true}, "NLB-IP": {false, true},
	} {
		o, err := Parse(svcWith(map[string]string{Prefix + "type": v}))
		if err != nil || o.NLB != want.nlb || o.NLB != (v == "nlb") {
			t.Errorf("type %q: %v, NLB %v; want NLB %v", v, err, o != nil && o.NLB, want.nlb)
			continue
		}
		if got := len(o.Advice) == 1; got != want.advised || (want.advised && !advised(o, "type", "a classic ELB is made")) {
			t.Errorf("type %q: advice %q; want advised %v", v, o.Advice, want.advised)
		}
	}
}

// ssl-ports without ssl-cert: upstream makes every listener plain; ccm too, with a Warning.
func TestSSLPortsWithoutCertAsUpstream(t *testing.T) {
	for _, ports := range []string{"443", "https", "*", "443,80", "8443"} {
		for _, nlb := range []bool{false, true} {
			ann := map[string]string{Prefix + "ssl-ports": ports}
			if nlb {
				ann[Prefix+"type"] = "nlb"
			}
			svc := svcWith(ann)
			o, err := Parse(svc)
			if err != nil || !advised(o, "ssl-ports", "has no effect without "+Prefix+"ssl-cert") {
				t.Errorf("ssl-ports %q (nlb %v): %v, advice %v", ports, nlb, err, o)
				continue
			}
			for _, p := range svc.Spec.Ports {
				if o.SSLPort(p) {
					t.Errorf("ssl-ports %q (nlb %v): port %d terminates TLS without a certificate", ports, nlb, p.Port)
				}
			}
		}
	}
	// With the certificate it applies, and says nothing.
	svc := svcWith(map[string]string{Prefix + "ssl-ports": "443", Prefix + "ssl-cert": "arn:aws:acm:us-east-1:1:certificate/x"})
	o, err := Parse(svc)
	if err != nil || len(o.Advice) != 0 || !o.SSLPort(svc.Spec.Ports[0]) || o.SSLPort(svc.Spec.Ports[1]) {
		t.Errorf("ssl-ports with ssl-cert: %v, %+v", err, o)
	}
}

// additional-resource-tags: kubernetes.io/ and k8s.io/ keys are accepted, as upstream accepts
// them, except the keys that carry ownership (ccm's and upstream's) and ccm's bookkeeping; aws:
// keys AWS itself refuses.
func TestExtraTagsOwnershipKeysRefused(t *testing.T) {
	accepted := []string{"team=a", "kubernetes.io/created-for/pvc/name=data", "kubernetes.io/role/elb=1", "kubernetes.io/x=y",
		"Kubernetes.io/Owner=me", "k8s.io/cluster-autoscaler/enabled=true", "kubernetes.io/clusters=x", "kubernetes.io/cluster=x",
		"kubernetes.io/service-name-alias=x", "KubernetesClusterName=x", "ccm.k8s.io=x", "awsx=1"}
	for _, kv := range accepted {
		tags, err := parseExtraTags(kv)
		k, v, _ := strings.Cut(kv, "=")
		if err != nil || len(tags) != 1 || tags[k] != v {
			t.Errorf("%q: %v, %v; want accepted", kv, tags, err)
		}
	}
	refused := []string{"kubernetes.io/cluster/prod=owned", "kubernetes.io/cluster/other=shared", "Kubernetes.io/Cluster/prod=owned",
		" kubernetes.io/cluster/prod =owned", "kubernetes.io/cluster/=owned", "kubernetes.io/service-name=ns/s", "kubernetes.io/service-uid=u",
		"KubernetesCluster=prod", "kubernetescluster=prod", "ccm.k8s.io/fingerprint=0", "ccm.k8s.io/node-groups=sg-1", "CCM.k8s.io/x=1",
		"aws:cloudformation:stack-name=x", "AWS:x=1"}
	for _, kv := range refused {
		k, _, _ := strings.Cut(kv, "=")
		_, err := parseExtraTags("team=a," + kv)
		if err == nil || !strings.Contains(err.Error(), Prefix+ExtraTags) || !strings.Contains(err.Error(), strings.TrimSpace(k)) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("%q: %v; want refused naming the annotation and the key", kv, err)
		}
	}
	// Every key ccm writes to say who owns an object, or reads for it, is refused.
	id := ownership.Of("prod", svcWith(nil))
	id.UID = "u"
	for k := range id.Tags() {
		if !ReservedTag(k) {
			t.Errorf("ownership tag %s is not reserved", k)
		}
	}
}

// backend-protocol on a classic ELB as upstream compares it: case-sensitively in the listeners
// ("HTTP" makes TCP listeners, and on a TLS port any value not in lower case is refused, as
// upstream refuses it), lower-cased in the health check (so "HTTPS" and "SSL" keep an SSL check).
// A value that differs from its lower case only in case gets a Warning. On an NLB upstream
// reads only "ssl" (TestAnnotationsForTheOtherTypeAdvised).
func TestBackendProtocolCaseAsUpstream(t *testing.T) {
	cert := "arn:aws:acm:us-east-1:1:certificate/x"
	for _, tc := range []struct {
		value, sslPorts string
		backend         string // "" is refused
		advised         bool
	}{
		{"http", "", "http", false}, {"https", "", "https", false}, {"ssl", "", "ssl", false}, {"tcp", "", "tcp", false},
		{"HTTP", "", "tcp", true}, {"Http", "", "tcp", true}, {"hTTP", "", "tcp", true},
		{"HTTPS", "", "https", true}, {"SSL", "", "ssl", true}, {"TCP", "", "tcp", true}, {"Ssl", "", "ssl", true},
		// With a certificate on a TLS port upstream's mapping knows only the lower-case values.
		{"http", "443", "http", false}, {"HTTP", "443", "", false}, {"HTTPS", "https", "", false}, {"SSL", "*", "", false},
		{"TCP", "443,80", "", false},
		// A certificate whose ssl-ports match no port of the Service: no TLS port, as without one.
		{"HTTP", "8443", "tcp", true},
	} {
		ann := map[string]string{Prefix + "backend-protocol": tc.value}
		if tc.sslPorts != "" {
			ann[Prefix+"ssl-cert"], ann[Prefix+"ssl-ports"] = cert, tc.sslPorts
		}
		o, err := Parse(svcWith(ann))
		name := fmt.Sprintf("%q ssl-ports %q", tc.value, tc.sslPorts)
		switch {
		case tc.backend == "":
			if err == nil || !strings.Contains(err.Error(), Prefix+"backend-protocol") || !strings.Contains(err.Error(), "lower case") {
				t.Errorf("%s: %v; want refused naming the annotation", name, err)
			}
		case err != nil || o.Backend != tc.backend:
			t.Errorf("%s: %v, backend %v; want %s", name, err, o, tc.backend)
		case tc.advised != advised(o, "backend-protocol", "case-sensitively"), !tc.advised && len(o.Advice) != 0:
			t.Errorf("%s: advice %q; want advised %v", name, o.Advice, tc.advised)
		}
	}
	// A value upstream does not know: refused on a TLS port of a classic ELB (upstream's
	// "Invalid backend protocol"), ignored with a Warning elsewhere; empty is unset.
	for _, tc := range []struct {
		value, typ, sslPorts string
		refused, advised     bool
	}{
		{"udp", "", "", false, true}, {"grpc", "", "", false, true}, {"TLS", "", "", false, true}, {"h2c", "", "8443", false, true},
		{"grpc", "", "443", true, false}, {"tls", "", "*", true, false}, {"Grpc", "", "https", true, false},
		{"", "", "443", false, false}, {"", "", "", false, false}, {"", "nlb", "443", false, false},
		{"grpc", "nlb", "", false, true}, {"tls", "nlb", "443", false, true}, {"TLS", "nlb", "*", false, true},
	} {
		ann := map[string]string{Prefix + "backend-protocol": tc.value}
		if tc.typ != "" {
			ann[Prefix+"type"] = tc.typ
		}
		if tc.sslPorts != "" {
			ann[Prefix+"ssl-cert"], ann[Prefix+"ssl-ports"] = cert, tc.sslPorts
		}
		o, err := Parse(svcWith(ann))
		name := fmt.Sprintf("%q type %q ssl-ports %q", tc.value, tc.typ, tc.sslPorts)
		switch {
		case tc.refused:
			if err == nil || !strings.Contains(err.Error(), Prefix+"backend-protocol") || !strings.Contains(err.Error(), "must be http, https, ssl or tcp") {
				t.Errorf("%s: %v; want refused naming the annotation", name, err)
			}
		case err != nil || o.Backend != "tcp" || o.TLSBackend:
			t.Errorf("%s: %v, %+v; want TCP", name, err, o)
		case tc.advised != advised(o, "backend-protocol", "is ignored"), !tc.advised && len(o.Advice) != 0:
			t.Errorf("%s: advice %q; want advised %v", name, o.Advice, tc.advised)
		}
	}
	// On an NLB upstream ignores every value but "ssl": no Warning for the case of the others.
	for _, v := range []string{"HTTP", "Tcp", "HTTPS"} {
		o, err := Parse(svcWith(map[string]string{Prefix + "type": "nlb", Prefix + "backend-protocol": v}))
		if err != nil || len(o.Advice) != 0 || o.TLSBackend {
			t.Errorf("nlb backend-protocol %q: %v, %+v", v, err, o)
		}
	}
}
