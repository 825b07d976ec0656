package poollb

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// MetalLB's rule for sharing: both Cluster, or the same pods (whatever the order of the
// selector's keys); Local with other pods, or no selector, never.
func TestCompatibleBackends(t *testing.T) {
	svc := func(local bool, sel map[string]string) Backends {
		s := &v1.Service{Spec: v1.ServiceSpec{Selector: sel}}
		if local {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		}
		return BackendsOf(s)
	}
	web := map[string]string{"app": "web", "tier": "front"}
	webAgain := map[string]string{"tier": "front", "app": "web"}
	for _, tc := range []struct {
		name string
		a, b Backends
		want bool
	}{
		{"both Cluster, other pods", svc(false, web), svc(false, map[string]string{"app": "db"}), true},
		{"both Local, same pods", svc(true, web), svc(true, webAgain), true},
		{"Local and Cluster, same pods", svc(true, web), svc(false, web), true},
		{"both Local, other pods", svc(true, web), svc(true, map[string]string{"app": "db"}), false},
		{"Local and Cluster, other pods", svc(true, web), svc(false, map[string]string{"app": "db"}), false},
		{"both Local, no selector", svc(true, nil), svc(true, nil), false},
	} {
		if got := compatible(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
