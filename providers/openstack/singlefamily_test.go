package openstack

import (
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
)

func TestServingOf(t *testing.T) {
	dual := lbService("d", nil)
	dual.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	withV6 := dual.DeepCopy()
	withV6.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "172.24.4.9"}, {IP: "fd00::2:9"}}
	single := lbService("d", nil)
	id := ownership.Of(cluster, dual)
	upstream := &loadbalancers.LoadBalancer{ID: "lb-1", Name: "kube_service_kubernetes_default_d", Description: legacyLBDescription(id),
		Tags: []string{"kube_service_kubernetes_default_d"}}
	own := &loadbalancers.LoadBalancer{ID: "lb-1", Name: upstream.Name, Description: legacyLBDescription(id), Tags: ownerTags(id)}
	taken := &loadbalancers.LoadBalancer{ID: "lb-1", Name: upstream.Name, Description: legacyLBDescription(id), Tags: append(ownerTags(id), tagSingleFamily)}
	other := &loadbalancers.LoadBalancer{ID: "lb-2", Name: upstream.Name, Description: "Kubernetes external service default/x from cluster kubernetes"}
	for _, tc := range []struct {
		name    string
		svc     *v1.Service
		lb      *loadbalancers.LoadBalancer
		adopted bool
		want    familyServing
	}{
		{"single-stack, upstream's", single, upstream, false, familyServing{}},
		{"dual, none yet", dual, nil, false, familyServing{}},
		{"dual, upstream's: taken over on one family", dual, upstream, false, familyServing{only: true, mark: true}},
		{"dual, taken over earlier (tag)", dual, taken, false, familyServing{only: true}},
		{"dual, ccm's own", dual, own, false, familyServing{}},
		{"dual, not the Service's by description", dual, other, false, familyServing{}},
		{"dual, shared, never had the second family", dual, other, true, familyServing{only: true}},
		{"dual, shared, has the second family", withV6, other, true, familyServing{}},
	} {
		if got := servingOf(id, tc.svc, tc.lb, tc.adopted); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
	msg := singleFamilyMessage(dual, upstream)
	for _, w := range []string{"IPv4 only", "ipv6 load balancer", "unset --tag " + tagSingleFamily + " lb-1"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q lacks %q", msg, w)
		}
	}
}
