package metrics

import (
	"time"

	"k8s.io/component-base/metrics"
)

var (
	// ReconcileTotal counts provider-side reconciles (EnsureLoadBalancer, node look-ups, ...).
	ReconcileTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "reconcile_total",
		Help:           "Provider reconciles by provider, kind (loadbalancer, instance), operation and result.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider", "kind", "operation", "result"})

	// ReconcileDuration is how long provider-side reconciles take.
	ReconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      namespace,
		Name:           "reconcile_duration_seconds",
		Help:           "Duration of provider reconciles by provider, kind and operation.",
		Buckets:        metrics.ExponentialBuckets(0.001, 4, 10),
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider", "kind", "operation"})

	// NodeDeletionsHeld counts Nodes kept although the cloud (for now) said their instance is gone.
	NodeDeletionsHeld = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "node_deletions_held_total",
		Help:           "Node deletions held back by provider and reason (cloud_error, not_confirmed).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider", "reason"})

	// IPPoolAddresses reports load balancer IP pool usage for providers that allocate VIPs.
	IPPoolAddresses = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      namespace,
		Name:           "ip_pool_addresses",
		Help:           "Addresses of load balancer IP pools by provider, pool and state (total, used).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider", "pool", "state"})

	// ConfigReloads counts changes of the cloud config seen while ccm runs, by provider and
	// result: applied (the new pools are in use) or rejected (the old ones stay).
	ConfigReloads = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "config_reload_total",
		Help:           "Changes of the cloud config seen while ccm runs, by provider and result (applied, rejected).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider", "result"})
)

// ObserveReconcile records one provider reconcile that started at start.
func ObserveReconcile(provider, kind, operation string, start time.Time, err error) {
	ReconcileTotal.WithLabelValues(provider, kind, operation, Classify(err, nil)).Inc()
	ReconcileDuration.WithLabelValues(provider, kind, operation).Observe(time.Since(start).Seconds())
}
