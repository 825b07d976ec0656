package vsphere

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/cloudtest"
)

// A Service that served an address before ccm keeps it when a pool covers it and no record
// holds it; when it cannot be kept, the Service gets another with a Warning that says why, so
// an operator who took over from MetalLB or kube-vip with a pool that misses their range sees
// which Services moved. A change the user asked for (spec.loadBalancerIP) is not warned about.
func TestTakeoverKeepsOrExplainsTheAddress(t *testing.T) {
	s := startSim(t)
	events := cloudtest.NewEventSink()
	c := newTestCloud(t, s)
	c.UseClusterName("takeover")
	c.Initialize(events, nil)
	lb, _ := c.LoadBalancer()
	ctx := context.Background()
	svc := func(name, status, requested string) *v1.Service {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, LoadBalancerIP: requested,
				Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
		if status != "" {
			s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: status}}
		}
		return s
	}
	holder := svc("holder", "", "192.0.2.77")
	if _, err := lb.EnsureLoadBalancer(ctx, "takeover", holder, nil); err != nil {
		t.Fatalf("ensure holder: %v", err)
	}
	cases := []struct {
		svc     *v1.Service
		keep    bool
		warning string // part of the Warning's message; "" for none
	}{
		{svc: svc("kept", "192.0.2.150", ""), keep: true},
		{svc: svc("outside", "198.51.100.7", ""), warning: "198.51.100.7 is in no pool serving namespace \"shop\""},
		{svc: svc("taken", "192.0.2.77", ""), warning: "192.0.2.77 is held by another load balancer record"},
		{svc: svc("asked", "198.51.100.8", "192.0.2.160")},
	}
	for _, tc := range cases {
		st, err := lb.EnsureLoadBalancer(ctx, "takeover", tc.svc, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.svc.Name, err)
		}
		was, got := tc.svc.Status.LoadBalancer.Ingress[0].IP, st.Ingress[0].IP
		if (got == was) != tc.keep {
			t.Errorf("%s: address %s -> %s, keep = %v", tc.svc.Name, was, got, tc.keep)
		}
		time.Sleep(100 * time.Millisecond) // the Event broadcaster
		var warnings []string
		for _, e := range events.On(tc.svc) {
			if strings.HasPrefix(e, v1.EventTypeWarning) {
				warnings = append(warnings, e)
			}
		}
		switch {
		case tc.warning == "" && len(warnings) != 0:
			t.Errorf("%s: unexpected Warnings %q", tc.svc.Name, warnings)
		case tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], reasonAddressChanged) ||
			!strings.Contains(warnings[0], tc.warning) || !strings.Contains(warnings[0], got)):
			t.Errorf("%s: Warnings %q, want one %s naming %s and %q", tc.svc.Name, warnings, reasonAddressChanged, got, tc.warning)
		}
		if tc.keep {
			if found, evs := events.Await(tc.svc, time.Second, v1.EventTypeNormal, reasonTakenOver, was); !found {
				t.Errorf("%s: no Normal %s Event naming %s: %q", tc.svc.Name, reasonTakenOver, was, evs)
			}
		}
	}
}
