package leader

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/ccm-project/ccm/common/provider"
)

// Tracked is a cloud whose writing calls (load balancers, routes) are counted while in flight,
// so a stopping leader can wait for them before it hands the Lease over.
//
// The library's controllers call with a context that ends the moment ccm is told to stop, so a
// write in flight would be cut off half-done and the drain would wait for nothing. Each writing
// call therefore runs with the caller's values and deadline but not its cancellation: once the
// caller's context ends, the call has grace more to finish (the renew deadline: as long as the
// drain waits, and the old leader holds the Lease meanwhile) before its context is cancelled.
type Tracked struct {
	cloudprovider.Interface
	grace time.Duration
	mu    sync.Mutex
	n     int
	idle  *sync.Cond
}

// SetInformers implements cloudprovider.InformerUser for the cloud inside.
func (t *Tracked) SetInformers(f informers.SharedInformerFactory) {
	provider.PassInformers(t.Interface, f)
}

// Track wraps cloud; a writing call may run grace past its caller's cancellation.
func Track(cloud cloudprovider.Interface, grace time.Duration) *Tracked {
	t := &Tracked{Interface: cloud, grace: grace}
	t.idle = sync.NewCond(&t.mu)
	return t
}

// begin counts a writing call and returns its context and the function that ends it.
func (t *Tracked) begin(caller context.Context) (context.Context, func()) {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	var ctx context.Context
	var cancel context.CancelFunc
	if dl, ok := caller.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.WithoutCancel(caller), dl)
	} else {
		ctx, cancel = context.WithCancel(context.WithoutCancel(caller))
	}
	var graceTimer *time.Timer
	var timerMu sync.Mutex
	stopAfter := context.AfterFunc(caller, func() {
		timerMu.Lock()
		graceTimer = time.AfterFunc(t.grace, cancel)
		timerMu.Unlock()
	})
	return ctx, func() {
		stopAfter()
		timerMu.Lock()
		if graceTimer != nil {
			graceTimer.Stop()
		}
		timerMu.Unlock()
		cancel()
		t.mu.Lock()
		t.n--
		if t.n == 0 {
			t.idle.Broadcast()
		}
		t.mu.Unlock()
	}
}

// InFlight is the number of writing calls running now.
func (t *Tracked) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// Drain waits until no writing call is in flight or ctx ends.
func (t *Tracked) Drain(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		t.mu.Lock()
		for t.n > 0 && ctx.Err() == nil {
			t.idle.Wait()
		}
		t.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.mu.Lock()
		t.idle.Broadcast() // let the waiter see ctx.Err and end
		t.mu.Unlock()
	}
}

func (t *Tracked) LoadBalancer() (cloudprovider.LoadBalancer, bool) {
	lb, ok := t.Interface.LoadBalancer()
	if !ok || lb == nil {
		return lb, ok
	}
	return &trackedLB{LoadBalancer: lb, t: t}, true
}

func (t *Tracked) Routes() (cloudprovider.Routes, bool) {
	r, ok := t.Interface.Routes()
	if !ok || r == nil {
		return r, ok
	}
	return &trackedRoutes{Routes: r, t: t}, true
}

type trackedLB struct {
	cloudprovider.LoadBalancer
	t *Tracked
}

func (l *trackedLB) EnsureLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	ctx, end := l.t.begin(ctx)
	defer end()
	return l.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
}

func (l *trackedLB) UpdateLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) error {
	ctx, end := l.t.begin(ctx)
	defer end()
	return l.LoadBalancer.UpdateLoadBalancer(ctx, cluster, svc, nodes)
}

func (l *trackedLB) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *v1.Service) error {
	ctx, end := l.t.begin(ctx)
	defer end()
	return l.LoadBalancer.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}

type trackedRoutes struct {
	cloudprovider.Routes
	t *Tracked
}

func (r *trackedRoutes) CreateRoute(ctx context.Context, cluster, hint string, route *cloudprovider.Route) error {
	ctx, end := r.t.begin(ctx)
	defer end()
	return r.Routes.CreateRoute(ctx, cluster, hint, route)
}

func (r *trackedRoutes) DeleteRoute(ctx context.Context, cluster string, route *cloudprovider.Route) error {
	ctx, end := r.t.begin(ctx)
	defer end()
	return r.Routes.DeleteRoute(ctx, cluster, route)
}
