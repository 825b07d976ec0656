package leader

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// Tracked is a cloud whose writing calls (load balancers, routes) are counted while in flight,
// so a stopping leader can wait for them before it hands the Lease over.
type Tracked struct {
	cloudprovider.Interface
	mu   sync.Mutex
	n    int
	idle *sync.Cond
}

// Track wraps cloud.
func Track(cloud cloudprovider.Interface) *Tracked {
	t := &Tracked{Interface: cloud}
	t.idle = sync.NewCond(&t.mu)
	return t
}

func (t *Tracked) begin() func() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	return func() {
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
	defer l.t.begin()()
	return l.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
}

func (l *trackedLB) UpdateLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) error {
	defer l.t.begin()()
	return l.LoadBalancer.UpdateLoadBalancer(ctx, cluster, svc, nodes)
}

func (l *trackedLB) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *v1.Service) error {
	defer l.t.begin()()
	return l.LoadBalancer.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}

type trackedRoutes struct {
	cloudprovider.Routes
	t *Tracked
}

func (r *trackedRoutes) CreateRoute(ctx context.Context, cluster, hint string, route *cloudprovider.Route) error {
	defer r.t.begin()()
	return r.Routes.CreateRoute(ctx, cluster, hint, route)
}

func (r *trackedRoutes) DeleteRoute(ctx context.Context, cluster string, route *cloudprovider.Route) error {
	defer r.t.begin()()
	return r.Routes.DeleteRoute(ctx, cluster, route)
}
