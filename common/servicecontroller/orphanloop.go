package servicecontroller

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/ccm-project/ccm/common/metrics"
)

// Orphan collection in ccm: the controller's Service cache, classes, cluster name and Event
// recorder feed a Collector (orphans.go) that runs every period. It runs only where the
// controller runs, that is while this ccm leads; a round is skipped, collecting nothing, while
// the cache is not synced or when the provider's listing fails.

// Defaults of the orphan flags: an hour of grace outlasts any ccm restart, rollout or leader
// change that could leave a Service briefly unaccounted for.
const (
	DefaultOrphanGrace  = time.Hour
	DefaultOrphanPeriod = 10 * time.Minute
)

// OrphanOptions configure orphan collection.
type OrphanOptions struct {
	Period time.Duration // between rounds; 0 turns collection off
	Grace  time.Duration // how long a load balancer stays an orphan before it is deleted; 0 never deletes
}

// RunOrphanCollector runs orphan collection for c's Services until ctx is done: a first round
// once the Service cache has synced, then one every opts.Period. It sets the
// ccm_orphaned_load_balancers gauge after each complete round and counts deletions.
func (c *Controller) RunOrphanCollector(ctx context.Context, lister OwnedLister, opts OrphanOptions) {
	if lister == nil || opts.Period <= 0 {
		return
	}
	col := c.orphanCollector(lister, opts.Grace)
	klog.InfoS("Starting orphan load balancer collection", "period", opts.Period, "gracePeriod", opts.Grace)
	if !cache.WaitForNamedCacheSyncWithContext(ctx, col.Synced) {
		return
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) { c.orphanRound(ctx, col) }, opts.Period)
}

func (c *Controller) orphanCollector(lister OwnedLister, grace time.Duration) *Collector {
	return &Collector{Lister: lister, Cluster: c.opts.ClusterName, Classes: c.opts.Classes, Services: c.services,
		Synced: c.synced[0], Recorder: c.recorder, Grace: grace}
}

// orphanRound runs one round and reports it in the metrics.
func (c *Controller) orphanRound(ctx context.Context, col *Collector) {
	deleted, err := col.Round(ctx)
	if err != nil {
		klog.ErrorS(err, "Orphan collection round skipped")
		return
	}
	metrics.OrphanedLoadBalancers.WithLabelValues(c.provider).Set(float64(col.Left))
	metrics.OrphanedLoadBalancersDeleted.WithLabelValues(c.provider).Add(float64(len(deleted)))
}
