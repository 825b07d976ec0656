package metrics

import "k8s.io/component-base/metrics"

var (
	// OrphanedLoadBalancers is how many load balancers the last orphan collection round found
	// without a Service to account for them (see common/servicecontroller/orphans.go).
	OrphanedLoadBalancers = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      namespace,
		Name:           "orphaned_load_balancers",
		Help:           "Load balancers owned by this cluster that no Service accounts for, at the last orphan collection round, by provider.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider"})

	// OrphanedLoadBalancersDeleted counts orphaned load balancers deleted after their grace period.
	OrphanedLoadBalancersDeleted = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "orphaned_load_balancers_deleted_total",
		Help:           "Orphaned load balancers deleted after the grace period, by provider.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider"})
)
