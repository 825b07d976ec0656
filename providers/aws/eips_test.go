package aws

import (
	"context"
	"strings"
	"testing"

	"github.com/ccm-project/ccm/common/ownership"
	"github.com/ccm-project/ccm/providers/aws/internal/annotations"
)

// eip-allocations takes only Elastic IPs tagged for the Service and free, or allowed by the
// operator: another team's, another cluster's, an untagged or an associated one is refused
// naming the annotation, before any write.
func TestEIPAllocationsMustBeTheServices(t *testing.T) {
	h := newHarness(t, "eips")
	ctx := context.Background()
	nodes := parityNodes(h, "eip-a")
	svc := tcpService("eip", map[string]string{annotations.Prefix + "type": "nlb"})
	own := ownership.Of("eips", svc).Tags()
	other := tcpService("other", nil)
	other.UID = "uid-other"
	mine := func() []string {
		return []string{h.fake.AddAddress(own), h.fake.AddAddress(own), h.fake.AddAddress(own)}
	}
	used := mine()
	h.fake.AssociateAddress(used[1], "eni-0123")
	allowed := h.fake.AddAddress(nil)
	for _, tc := range []struct {
		name   string
		allocs []string
		ok     bool
	}{
		{"untagged", []string{h.fake.AddAddress(own), h.fake.AddAddress(nil), h.fake.AddAddress(own)}, false},
		{"another Service's", []string{h.fake.AddAddress(own), h.fake.AddAddress(ownership.Of("eips", other).Tags()), h.fake.AddAddress(own)}, false},
		{"another cluster's", []string{h.fake.AddAddress(ownership.Of("prod", svc).Tags()), h.fake.AddAddress(own), h.fake.AddAddress(own)}, false},
		{"associated", used, false},
		{"missing", []string{"eipalloc-404", h.fake.AddAddress(own), h.fake.AddAddress(own)}, false},
		{"the Service's and one the operator allowed", []string{h.fake.AddAddress(own), allowed, h.fake.AddAddress(own)}, true},
	} {
		lb, _ := h.cloud(t, "[Global]\nAllowedResourceIDs = "+allowed+"\n").LoadBalancer()
		svc.Annotations[annotations.Prefix+annotations.EIPAllocations] = strings.Join(tc.allocs, ",")
		w := h.fake.Writes()
		_, err := lb.EnsureLoadBalancer(ctx, "x", svc, nodes)
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			if a, _ := h.fake.AddressOf(allowed); a.Association == "" {
				t.Errorf("%s: the allowed address is not associated", tc.name)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "annotation "+annotations.Prefix+annotations.EIPAllocations) {
			t.Errorf("%s: %v, want a refusal naming the annotation", tc.name, err)
		}
		if d := h.fake.Writes() - w; d != 0 {
			t.Errorf("%s: %d writes before the refusal", tc.name, d)
		}
	}
}
