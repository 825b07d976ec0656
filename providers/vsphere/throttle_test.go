package vsphere

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/ccm-project/ccm/common/throttle"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

// throttledAttempts is ccm_cloud_api_requests_total{provider="vsphere",result="throttled"}.
func throttledAttempts(t *testing.T) float64 {
	t.Helper()
	fams, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, f := range fams {
		if f.GetName() != "ccm_cloud_api_requests_total" {
			continue
		}
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] == ProviderName && labels["result"] == "throttled" {
				n += m.Counter.GetValue()
			}
		}
	}
	return n
}

// A burst of LoadBalancer Services against a throttling vCenter: every 503 with Retry-After is
// waited out inside the call (SOAP and vAPI alike), so no reconcile fails and every Service
// gets its record.
func TestThrottledBurstRecordsEveryLoadBalancer(t *testing.T) {
	const services = 8
	ctx := context.Background()
	s := startSim(t)
	if _, err := s.AddVM(ctx, "node-a", 0, 0, []sim.NIC{{Network: "VM Network", IPs: []string{"10.0.0.5"}}}); err != nil {
		t.Fatal(err)
	}
	lb, _ := newTestCloud(t, s).LoadBalancer()
	nodes := []*v1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}}
	s.SetThrottle(4, 10)
	metricBefore := throttledAttempts(t)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, services)
	for i := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", i)},
				Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}}}}
			if _, err := lb.EnsureLoadBalancer(ctx, "kubernetes", svc, nodes); err != nil {
				errs <- fmt.Errorf("%s: %w", svc.Name, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("reconcile failed under throttling: %v", err)
	}
	calls := s.Calls()
	s.SetThrottle(0, 0)
	if calls.Throttled == 0 {
		t.Fatalf("the sim throttled nothing (%d calls): the test proves nothing", calls.Total)
	}
	if res, err := s.Resources(); err != nil || len(res) != services {
		t.Errorf("%d load balancer records (%v), want %d", len(res), err, services)
	}
	if got := throttledAttempts(t) - metricBefore; got != float64(calls.Throttled) {
		t.Errorf("metrics counted %v throttled attempts, the sim refused %d", got, calls.Throttled)
	}
	t.Logf("%d Services in %v: %d calls, %d answered 503 + Retry-After", services, time.Since(start).Round(time.Millisecond), calls.Total, calls.Throttled)
}

// A vCenter that keeps refusing gets a bounded number of retries, then the 503 is the error;
// a 503 without Retry-After (an outage) is not retried at all.
func TestThrottleRetriesAreBounded(t *testing.T) {
	defer func(p throttle.Policy) { throttlePolicy = p }(throttlePolicy)
	throttlePolicy = throttle.Policy{Retries: 3, BaseWait: time.Millisecond, MaxWait: 5 * time.Millisecond}
	s := startSim(t)
	in, _ := newTestCloud(t, s).InstancesV2()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}

	s.SetThrottle(1, 0.001)
	before := s.Calls()
	start := time.Now()
	for range 2 { // the first may use the one token
		_, err := in.InstanceExists(context.Background(), node)
		if err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "503") {
			t.Fatalf("err = %v, want the 503", err)
		}
		break
	}
	after := s.Calls()
	if n := after.Throttled - before.Throttled; n != 4 {
		t.Errorf("%d answers were throttled, want 4 (1 + 3 retries)", n)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v; the waits are capped at %v", d, throttlePolicy.MaxWait)
	}

	s.SetThrottle(0, 0)
	s.SetOutage(true)
	defer s.SetOutage(false)
	in, _ = newTestCloud(t, s).InstancesV2()
	if _, err := in.InstanceExists(context.Background(), node); err == nil {
		t.Fatal("no error during the outage")
	}
	if n := s.Calls().Failed; n != 1 {
		t.Errorf("%d calls refused by the outage, want 1 (no retry without Retry-After)", n)
	}
}
