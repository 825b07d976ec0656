package servicecontroller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"k8s.io/klog/v2"
)

// Drift resync: a load balancer changed or deleted by hand must be repaired without
// waiting for its Service to change. Informer resyncs cannot do it (an identical copy syncs
// nothing), so every period each load balancer this controller made in this process is synced
// again: the provider compares the cloud with the desired state (at most about one read per
// load balancer, listings batched) and writes only the difference. The sync is quiet, as the
// first one after a restart: no Event and no status patch unless the provider's answer
// changes the status; the provider reports what it repaired with its own Event.

// DefaultResyncPeriod is how often every load balancer is compared with the cloud.
const DefaultResyncPeriod = 10 * time.Minute

// RunDriftResync queues every served Service for a quiet sync once per period, until ctx is
// done. period <= 0 turns it off.
func (c *Controller) RunDriftResync(ctx context.Context, period time.Duration) {
	if period <= 0 {
		klog.InfoS("Load balancer drift resync is off")
		return
	}
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		return
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n := c.queueResync()
			klog.V(2).InfoS("Load balancers queued for a drift check", "count", n)
		}
	}
}

// queueResync puts the Services whose load balancer this controller synced in this process
// and still serves in the resync queue, and returns how many. The feed (fairqueue.go) admits
// them to the Service queue behind every change. Others are left alone: a Service not yet
// synced is queued by its own events; one of another class is another controller's.
func (c *Controller) queueResync() int {
	svcs, err := c.services.List(labels.Everything())
	if err != nil {
		return 0
	}
	n := 0
	for _, svc := range svcs {
		key, err := cache.MetaNamespaceKeyFunc(svc)
		if err != nil || !c.opts.Classes.Wants(svc) || c.opts.Classes.NeedsCleanup(svc) || !servicehelper.HasLBFinalizer(svc) {
			continue
		}
		if st, known := c.stateOf(key); known && st.uid == svc.UID {
			c.resyncQueue.Add(key)
			n++
		}
	}
	return n
}

// takeResync reports whether key was queued by a drift resync, and clears the mark.
func (c *Controller) takeResync(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.resync[key]
	delete(c.resync, key)
	return ok
}
