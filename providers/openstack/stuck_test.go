package openstack

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/listeners"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	v1 "k8s.io/api/core/v1"
	"k8s.io/cloud-provider/api"

	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func TestBackoff(t *testing.T) {
	base := 5 * time.Second
	for n, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, maxPendingDelay, maxPendingDelay} {
		if got := backoff(base, n); got != want {
			t.Errorf("backoff(%v, %d) = %v, want %v", base, n, got, want)
		}
	}
	if got := backoff(10*time.Minute, 3); got != 10*time.Minute {
		t.Errorf("a base above the cap: %v, want the base", got)
	}
}

func TestPendingLooks(t *testing.T) {
	var p pendingLooks
	t0 := time.Unix(1000, 0)
	if age, next := p.look("lb", t0, time.Second, time.Minute); age != 0 || next != time.Second {
		t.Errorf("first look: %v %v", age, next)
	}
	if age, next := p.look("lb", t0.Add(30*time.Second), time.Second, time.Minute); age != 30*time.Second || next != time.Second {
		t.Errorf("younger than stuckAfter: %v %v, want the base delay", age, next)
	}
	var nexts []time.Duration
	for i := 0; i < 3; i++ {
		_, next := p.look("lb", t0.Add(2*time.Minute), time.Second, time.Minute)
		nexts = append(nexts, next)
	}
	if nexts[0] != time.Second || nexts[1] != 2*time.Second || nexts[2] != 4*time.Second {
		t.Errorf("stuck: delays %v, want doubling", nexts)
	}
	p.settled("lb")
	if age, next := p.look("lb", t0.Add(time.Hour), time.Second, time.Minute); age != 0 || next != time.Second {
		t.Errorf("after settled: %v %v, want a fresh start", age, next)
	}
}

func TestStuckChildren(t *testing.T) {
	plan := listenerPlan{
		Keep:    map[string]listeners.Listener{"TCP/80": {ID: "L1", ProvisioningStatus: "PENDING_CREATE", DefaultPoolID: "P1"}},
		Relabel: map[string]listeners.Listener{"TCP/443": {ID: "L2", ProvisioningStatus: "ACTIVE", DefaultPoolID: "P2"}},
		Delete:  []listenerDelete{{Listener: listeners.Listener{ID: "L3", Protocol: "UDP", ProtocolPort: 53, ProvisioningStatus: "ACTIVE"}}},
	}
	all := []pools.Pool{{ID: "P1", Name: "pool_80", ProvisioningStatus: "PENDING_CREATE"}, {ID: "P2", Name: "pool_443", ProvisioningStatus: "PENDING_UPDATE"},
		{ID: "P9", Name: "not ours", ProvisioningStatus: "PENDING_CREATE"}}
	got := stuckChildren(plan, all)
	var s []string
	for _, c := range got {
		s = append(s, c.String())
	}
	want := "listener TCP/80 (L1) is PENDING_CREATE, pool pool_80 (P1) is PENDING_CREATE, pool pool_443 (P2) is PENDING_UPDATE"
	if strings.Join(s, ", ") != want {
		t.Errorf("stuck = %q, want %q", strings.Join(s, ", "), want)
	}
	if got := stuckChildren(listenerPlan{Keep: map[string]listeners.Listener{"TCP/80": {ID: "L1", ProvisioningStatus: "ACTIVE"}}}, nil); len(got) != 0 {
		t.Errorf("nothing pending: %v", got)
	}
}

// Octavia 11 without its jobboard provisions a fully populated create's load balancer but
// leaves its children PENDING_CREATE for good, refusing every write to them with 409. ccm
// then writes nothing to them, looks again with a growing delay instead of every
// pending-retry, and once they have been pending for stuckAfter says so in a Warning naming
// each object and its state.
func TestStuckChildrenWarnedAndBackedOff(t *testing.T) {
	f := newFake(t, fake.Options{NoJobboard: true})
	c := newTestCloud(t, f, "")
	sink, stop := newSink(t)
	c.Initialize(sink, stop)
	lbs := c.lb
	lbs.stuckAfter = 300 * time.Millisecond
	svc, nodes := lbService("web", nil), lbNodes("10.0.0.5")
	ctx := context.Background()
	_, err := lbs.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	for deadline := time.Now().Add(5 * time.Second); err != nil && isRetry(err) && !strings.Contains(err.Error(), "PENDING_CREATE") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		_, err = lbs.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	}
	if !isRetry(err) || !strings.Contains(err.Error(), "listener TCP/80") || !strings.Contains(err.Error(), "is PENDING_CREATE") {
		t.Fatalf("Ensure with children left pending = %v, want a RetryError naming the listener and its state", err)
	}
	writes := f.Writes()
	svc.Spec.Ports[0].NodePort = 31080 // a change that would write the members
	var delays []time.Duration
	time.Sleep(350 * time.Millisecond)
	for i := 0; i < 3; i++ {
		_, err = lbs.EnsureLoadBalancer(ctx, cluster, svc, nodes)
		var r *api.RetryError
		if !errors.As(err, &r) {
			t.Fatalf("look %d: %v, want a RetryError", i, err)
		}
		delays = append(delays, r.RetryAfter())
	}
	if w := f.Writes() - writes; w != 0 {
		t.Errorf("%d writes to a load balancer whose children Octavia holds pending, want 0", w)
	}
	if !(delays[1] > delays[0] && delays[2] > delays[1]) {
		t.Errorf("delays %v, want each longer than the last", delays)
	}
	if found, evs := sink.Await(svc, 2*time.Second, v1.EventTypeWarning, reasonStuck, "listener TCP/80"); !found {
		t.Errorf("no Warning %s naming the listener; Events: %q", reasonStuck, evs)
	}
}
