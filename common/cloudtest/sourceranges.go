package cloudtest

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/sourceranges"
)

// LegacySourceRangesAreAdvised is for providers with no firewall of their own (dummy, vSphere):
// a Service restricting its clients by the legacy annotation alone, which kube-proxy does not
// read, gets one Warning saying the ranges are not enforced, and no more at the next syncs; a
// Service with spec.loadBalancerSourceRanges (kube-proxy enforces them) gets none. events is
// the sink the provider's cloud was initialised with.
func LegacySourceRangesAreAdvised(t T, lb cloudprovider.LoadBalancer, clusterName string, events *EventSink, nodes []*v1.Node) {
	t.Helper()
	legacy := newService("legacy-ranges")
	legacy.Annotations = map[string]string{sourceranges.Annotation: "203.0.113.0/24"}
	spec := newService("spec-ranges")
	spec.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	c := Config{ClusterName: clusterName}
	for _, svc := range []*v1.Service{legacy, spec} {
		ensure(t, lb, c, svc, nodes)
	}
	if ok, evs := events.Await(legacy, 5*time.Second, sourceranges.ReasonNotEnforced, sourceranges.Annotation); !ok {
		t.Errorf("annotation-only source ranges: no %s Warning (Events %q)", sourceranges.ReasonNotEnforced, evs)
	}
	before := events.Writes()
	for range 2 {
		for _, svc := range []*v1.Service{legacy, spec} {
			if _, err := lb.EnsureLoadBalancer(ctx, clusterName, svc, nodes); err != nil {
				t.Fatalf("EnsureLoadBalancer %s: %v", svc.Name, err)
			}
		}
	}
	time.Sleep(300 * time.Millisecond) // the broadcaster delivers asynchronously
	if w := events.Writes() - before; w != 0 {
		t.Errorf("2 more syncs of the unchanged Services wrote %d Events, want 0 (%q)", w, events.On(legacy))
	}
	for _, e := range events.On(spec) {
		if strings.Contains(e, sourceranges.ReasonNotEnforced) {
			t.Errorf("spec.loadBalancerSourceRanges (enforced by kube-proxy) got %q", e)
		}
	}
	for _, svc := range []*v1.Service{legacy, spec} {
		if err := again(c, func() error { return lb.EnsureLoadBalancerDeleted(ctx, clusterName, svc) }); err != nil {
			t.Errorf("EnsureLoadBalancerDeleted %s: %v", svc.Name, err)
		}
	}
}
