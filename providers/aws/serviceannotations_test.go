package aws

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
	"github.com/ccm-project/ccm/providers/aws/internal/upstream"
)

// spec.loadBalancerIP and sessionAffinity ClientIP are refused before any write, naming the
// field, for both load balancer types.
func TestUnsupportedSpecRefused(t *testing.T) {
	h := newHarness(t, "spec")
	lb, _ := h.cloud(t, "").LoadBalancer()
	nodes := []*v1.Node{node(h, "spec-a")}
	for _, typ := range []string{"", "nlb"} {
		for field, mutate := range map[string]func(*v1.Service){
			"spec.loadBalancerIP":  func(s *v1.Service) { s.Spec.LoadBalancerIP = "203.0.113.9" }, //nolint:staticcheck // the field refused
			"spec.sessionAffinity": func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP },
		} {
			svc := lbService("s", map[string]string{annotations.Prefix + annotations.Type: typ})
			mutate(svc)
			w := h.fake.Writes()
			_, err := lb.EnsureLoadBalancer(context.Background(), "x", svc, nodes)
			if err == nil || !strings.Contains(err.Error(), field) || h.fake.Writes() != w {
				t.Errorf("type %q, %s: %v, %d writes; want a refusal naming the field and none", typ, field, err, h.fake.Writes()-w)
			}
		}
	}
}

// The provider's own tag keys are reserved (annotation additional-resource-tags cannot set
// them), and an accepted kubernetes.io/ key cannot replace an ownership tag.
func TestProviderTagsReserved(t *testing.T) {
	id := ownership.Of("prod", tcpService("s", nil))
	id.UID = "u"
	for _, k := range []string{fingerprintTag, nodeGroupsTag, upstream.LegacyClusterTag, ownership.ClusterTagPrefix + "other"} {
		if !annotations.ReservedTag(k) {
			t.Errorf("%s is not reserved", k)
		}
	}
	tags := ownTags(id, map[string]string{"kubernetes.io/x": "y", ownership.ServiceTag: "forged"}, nil)
	if tags["kubernetes.io/x"] != "y" || tags[ownership.ServiceTag] != id.Service() || tags[ownership.ClusterTagPrefix+"prod"] != ownership.Owned {
		t.Errorf("ownTags %v", tags)
	}
}
