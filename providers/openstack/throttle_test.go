package openstack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ccm-project/ccm/common/throttle"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

// A burst of LoadBalancer Services against a throttling cloud: every 429 is waited out inside
// the call (Retry-After), so no reconcile fails and every load balancer is made.
func TestThrottledBurstCreatesEveryLoadBalancer(t *testing.T) {
	const services = 6
	f := newFake(t, fake.Options{})
	f.SetThrottle(10, 20)
	lb := lbOf(t, newTestCloud(t, f, ""))
	nodes := lbNodes("10.0.0.5", "10.0.0.6")
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, services)
	for i := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := lbService(fmt.Sprintf("web-%d", i), nil)
			for deadline := time.Now().Add(60 * time.Second); ; {
				_, err := lb.EnsureLoadBalancer(context.Background(), cluster, svc, nodes)
				if err == nil {
					return
				}
				if !isRetry(err) || time.Now().After(deadline) { // a RetryError is "still provisioning"
					errs <- fmt.Errorf("%s: %w", svc.Name, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("reconcile failed under throttling: %v", err)
	}
	calls := f.Counters()
	if calls.Throttled == 0 {
		t.Fatalf("the fake throttled nothing (%d calls): the test proves nothing", calls.Total)
	}
	active := 0
	for _, l := range f.LoadBalancers() {
		if l.Status == "ACTIVE" {
			active++
		}
	}
	if active != services {
		t.Errorf("%d load balancers ACTIVE, want %d", active, services)
	}
	t.Logf("%d Services in %v: %d calls, %d answered 429", services, time.Since(start).Round(time.Millisecond), calls.Total, calls.Throttled)
}

// A cloud that keeps refusing gets a bounded number of retries, then the 429 is the error.
func TestThrottleRetriesAreBounded(t *testing.T) {
	defer func(p throttle.Policy) { throttlePolicy = p }(throttlePolicy)
	throttlePolicy = throttle.Policy{Retries: 3, BaseWait: time.Millisecond, MaxWait: 5 * time.Millisecond}
	f := newFake(t, fake.Options{})
	id := f.AddServer(fake.ServerSpec{Name: "node-a", IPs: []string{"10.0.0.5"}})
	in, _ := newTestCloud(t, f, "").InstancesV2()
	node := node("node-a", "openstack:///"+id)
	if _, err := in.InstanceExists(context.Background(), node); err != nil { // logs in
		t.Fatal(err)
	}
	f.SetThrottle(1, 0.001)
	if _, err := in.InstanceExists(context.Background(), node); err != nil { // the one token
		t.Fatal(err)
	}
	start := time.Now()
	before := f.Counters().Throttled
	_, err := in.InstanceExists(context.Background(), node)
	if err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("err = %v, want the 429 after the retries", err)
	}
	// The bucket is empty: the call is refused once and retried 3 times.
	if n := f.Counters().Throttled - before; n != 4 {
		t.Errorf("%d answers were 429, want 4 (1 + 3 retries)", n)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v; the waits are capped at %v", d, throttlePolicy.MaxWait)
	}
}
