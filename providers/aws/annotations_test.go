package aws

import (
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
		"type": "alb", "proxy-protocol": "v2", "connection-idle-timeout": "60", "internal": "maybe",
		"backend-protocol": "udp", "healthcheck-interval": "1", "security-groups": "default",
		"ssl-ports": "443", "additional-resource-tags": "kubernetes.io/x=y", "target-node-labels": "a in (",
	} {
		_, err := parseOptions(svcWith(map[string]string{annotationPrefix + ann: val}))
		if err == nil || !strings.Contains(err.Error(), annotationPrefix+ann) {
			t.Errorf("%s=%q: error %v does not name the annotation", ann, val, err)
		}
	}
	for ann, val := range map[string]string{"security-groups": "sg-1", "backend-protocol": "http", "cross-zone-load-balancing-enabled": "true"} {
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
