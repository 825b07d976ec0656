package leader

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

// blockingLB holds EnsureLoadBalancer until release is closed.
type blockingLB struct {
	cloudprovider.LoadBalancer
	entered, release chan struct{}
}

func (b *blockingLB) EnsureLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) (*v1.LoadBalancerStatus, error) {
	close(b.entered)
	<-b.release
	return &v1.LoadBalancerStatus{}, nil
}

type lbCloud struct {
	*fakecloud.Cloud
	lb *blockingLB
}

func (c *lbCloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.lb, true }

func TestDrainWaitsForWritesInFlight(t *testing.T) {
	lb := &blockingLB{entered: make(chan struct{}), release: make(chan struct{})}
	tr := Track(&lbCloud{Cloud: &fakecloud.Cloud{}, lb: lb}, time.Minute)
	l, _ := tr.LoadBalancer()
	go l.EnsureLoadBalancer(context.Background(), "c", &v1.Service{}, nil) //nolint:errcheck
	<-lb.entered
	if n := tr.InFlight(); n != 1 {
		t.Fatalf("in flight = %d, want 1", n)
	}
	// Bounded: a call that never ends does not hold the stop forever.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	tr.Drain(ctx)
	cancel()
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("Drain returned after %v with a call in flight", d)
	}
	drained := make(chan struct{})
	go func() { tr.Drain(context.Background()); close(drained) }()
	select {
	case <-drained:
		t.Fatal("Drain returned with a call in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(lb.release)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("Drain did not return after the call ended")
	}
	if n := tr.InFlight(); n != 0 {
		t.Fatalf("in flight = %d after the call, want 0", n)
	}
}

type initCounter struct {
	*fakecloud.Cloud
	inits chan struct{}
}

func (c *initCounter) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {
	c.inits <- struct{}{}
}

func TestGateInitialisesOnlyWhenLeading(t *testing.T) {
	c := &initCounter{Cloud: &fakecloud.Cloud{}, inits: make(chan struct{}, 1)}
	leading, stop := make(chan struct{}), make(chan struct{})
	g := Gate(c, leading)
	done := make(chan struct{})
	go func() { g.Initialize(nil, stop); close(done) }()
	select {
	case <-c.inits:
		t.Fatal("a standby initialised the cloud")
	case <-time.After(50 * time.Millisecond):
	}
	close(leading)
	<-done
	if len(c.inits) != 1 {
		t.Fatal("the leader did not initialise the cloud")
	}

	// Stopped before leading: no initialisation.
	c2 := &initCounter{Cloud: &fakecloud.Cloud{}, inits: make(chan struct{}, 1)}
	stop2 := make(chan struct{})
	close(stop2)
	Gate(c2, make(chan struct{})).Initialize(nil, stop2)
	if len(c2.inits) != 0 {
		t.Fatal("initialised after stop without leading")
	}
}
