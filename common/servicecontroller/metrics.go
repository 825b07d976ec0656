package servicecontroller

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// The library's service controller metrics, with its names, help and buckets, so dashboards
// and alerts written for it keep working when ccm's controller runs in its place. They count
// the member updates (node sync) as the library's do; ccm's own figures are in
// ccm_reconcile_* and the workqueue metrics of the queues "service", "service-resync" and "node".
const metricsSubsystem = "service_controller"

var (
	loadBalancerSyncCount = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "loadbalancer_sync_total",
		Help:           "A metric counting the amount of times any load balancer has been configured, as an effect of service/node changes on the cluster",
		StabilityLevel: metrics.ALPHA,
	})
	nodeSyncErrorCount = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "nodesync_error_total",
		Help:           "A metric counting the amount of times any load balancer has been configured and errored, as an effect of node changes on the cluster",
		StabilityLevel: metrics.ALPHA,
	})
	nodeSyncLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "nodesync_latency_seconds",
		Help:           "A metric measuring the latency for nodesync which updates loadbalancer hosts on cluster node updates.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
	updateLoadBalancerHostLatency = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "update_loadbalancer_host_latency_seconds",
		Help:           "A metric measuring the latency for updating each load balancer hosts.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
	registerMetrics sync.Once
)

// register adds the metrics to the legacy registry (served at /metrics) once. A process that
// built the library's controller first has them under the same names already; that is no error.
func register() {
	registerMetrics.Do(func() {
		for _, m := range []metrics.Registerable{loadBalancerSyncCount, nodeSyncErrorCount, nodeSyncLatency, updateLoadBalancerHostLatency} {
			if err := legacyregistry.Register(m); err != nil {
				klog.V(2).InfoS("Service controller metric already registered", "err", err)
			}
		}
	})
}
