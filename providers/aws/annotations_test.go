package aws

import (
	"maps"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func svcWith(ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n", Annotations: ann},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "https", Port: 443, NodePort: 30443, Protocol: v1.ProtocolTCP}, {Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
}

func TestAnnotationsRejectedNameTheAnnotation(t *testing.T) {
	for ann, val := range map[string]string{
		"type": "alb", "proxy-protocol": "v2", "connection-idle-timeout": "0", "access-log-emit-interval": "30",
		"healthcheck-protocol": "UDP", "healthcheck-port": "http", "healthcheck-path": "healthz", "ssl-negotiation-policy": "a policy",
		"connection-draining-enabled": "yes", "scheme": "internal",
		"backend-protocol": "udp", "healthcheck-interval": "1", "security-groups": "default",
		"ssl-ports": "443", "additional-resource-tags": "kubernetes.io/x=y", "target-node-labels": "a in (",
	} {
		_, err := parseOptions(svcWith(map[string]string{annotationPrefix + ann: val}))
		if err == nil || !strings.Contains(err.Error(), annotationPrefix+ann) {
			t.Errorf("%s=%q: error %v does not name the annotation", ann, val, err)
		}
	}
	for ann, val := range map[string]string{"healthcheck-protocol": "SSL", "healthcheck-timeout": "121", "target-group-attributes": "a"} {
		_, err := parseOptions(svcWith(map[string]string{annotationPrefix + "type": "nlb", annotationPrefix + ann: val}))
		if err == nil || !strings.Contains(err.Error(), annotationPrefix+ann) {
			t.Errorf("nlb with %s: error %v does not name the annotation", ann, err)
		}
	}
	udp := svcWith(nil)
	udp.Spec.Ports[0].Protocol = v1.ProtocolUDP
	if _, err := parseOptions(udp); err == nil || !strings.Contains(err.Error(), "UDP") {
		t.Errorf("UDP port accepted: %v", err)
	}
}

func TestAnnotationsParsed(t *testing.T) {
	o, err := parseOptions(svcWith(map[string]string{
		annotationPrefix + "internal":                 "true",
		annotationPrefix + "ssl-cert":                 "arn:aws:acm:us-east-1:1:certificate/x",
		annotationPrefix + "ssl-ports":                "https",
		annotationPrefix + "backend-protocol":         "http",
		annotationPrefix + "additional-resource-tags": "team=a, cost=b",
		annotationPrefix + "target-node-labels":       "pool=web",
		annotationPrefix + "healthcheck-interval":     "20",
		annotationPrefix + "proxy-protocol":           "*",
	}))
	if err != nil {
		t.Fatal(err)
	}
	svc := svcWith(nil)
	if !o.Internal || !o.sslPort(svc.Spec.Ports[0]) || o.sslPort(svc.Spec.Ports[1]) || o.ExtraTags["cost"] != "b" || o.HC.Interval != 20 || !o.ProxyProtocol {
		t.Errorf("options %+v", o)
	}
	if !o.NodeSelector.Matches(labels.Set{"pool": "web"}) || o.NodeSelector.Matches(labels.Set{"pool": "db"}) {
		t.Error("target-node-labels selector wrong")
	}
}

// Upstream: any value of internal but "false" (or none) is internal.
func TestInternalAsUpstream(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "0.0.0.0/0": true, "yes": true, "false": false, "": false, "False": true} {
		o, err := parseOptions(svcWith(map[string]string{annotationPrefix + "internal": v}))
		if err != nil || o.Internal != want {
			t.Errorf("internal=%q: internal %v, %v; want %v", v, o != nil && o.Internal, err, want)
		}
	}
}

// Annotations upstream reads for the other load balancer type are advice, not errors.
func TestAnnotationsForTheOtherTypeAdvised(t *testing.T) {
	nlb := map[string]string{annotationPrefix + "type": "nlb"}
	for _, ann := range []string{"security-groups", "extra-security-groups", "proxy-protocol", "connection-idle-timeout", "connection-draining-enabled", "connection-draining-timeout", "access-log-emit-interval"} {
		a := maps.Clone(nlb)
		a[annotationPrefix+ann] = map[string]string{"security-groups": "sg-1", "extra-security-groups": "sg-2", "proxy-protocol": "*", "connection-draining-enabled": "true", "access-log-emit-interval": "5"}[ann]
		if a[annotationPrefix+ann] == "" {
			a[annotationPrefix+ann] = "30"
		}
		o, err := parseOptions(svcWith(a))
		if err != nil || len(o.Advice) != 1 || !strings.Contains(o.Advice[0], annotationPrefix+ann) {
			t.Errorf("nlb with %s: %v, advice %v; want one advice naming it", ann, err, o)
		}
	}
	// backend-protocol ssl on an NLB with a certificate: TLS target groups, no advice; upstream
	// reads only "ssl" as written, so "SSL" keeps them TCP and says so.
	o, err := parseOptions(svcWith(map[string]string{annotationPrefix + "type": "nlb", annotationPrefix + "backend-protocol": "ssl", annotationPrefix + "ssl-cert": "arn:aws:acm:us-east-1:1:certificate/x"}))
	if err != nil || len(o.Advice) != 0 || !o.TLSBackend {
		t.Errorf("nlb with backend-protocol ssl: %v, advice %v, TLS backend %v; want TLS, no advice", err, o.Advice, o.TLSBackend)
	}
	o, err = parseOptions(svcWith(map[string]string{annotationPrefix + "type": "nlb", annotationPrefix + "backend-protocol": "SSL", annotationPrefix + "ssl-cert": "arn:aws:acm:us-east-1:1:certificate/x"}))
	if err != nil || len(o.Advice) != 1 || !strings.Contains(o.Advice[0], annotationPrefix+"backend-protocol") || o.TLSBackend {
		t.Errorf("nlb with backend-protocol SSL: %v, advice %v, TLS backend %v; want TCP and one advice naming it", err, o.Advice, o.TLSBackend)
	}
	for _, ann := range []string{"target-group-attributes", "eip-allocations", "private-ipv4-addresses"} {
		o, err := parseOptions(svcWith(map[string]string{annotationPrefix + ann: "x"}))
		if err != nil || len(o.Advice) != 1 || !strings.Contains(o.Advice[0], annotationPrefix+ann) {
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
	if !sameSet(upstream, supported) {
		t.Errorf("supported %v, upstream %v", supported, upstream)
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
	legacy := svcWith(map[string]string{annSourceRanges: "10.0.0.0/8, 172.16.0.0/12"})
	if got, err := parseSourceRanges(legacy); err != nil || !slices.Equal(got, []string{"10.0.0.0/8", "172.16.0.0/12"}) {
		t.Errorf("legacy annotation: %v, %v", got, err)
	}
	if got, err := parseSourceRanges(svcWith(nil)); err != nil || !slices.Equal(got, []string{"0.0.0.0/0"}) {
		t.Errorf("none: %v, %v", got, err)
	}
	if _, err := parseSourceRanges(svcWith(map[string]string{annSourceRanges: "10.0.0.0/8,,"})); err == nil || !strings.Contains(err.Error(), annSourceRanges) {
		t.Errorf("empty item: %v, want an error naming the annotation", err)
	}
}
