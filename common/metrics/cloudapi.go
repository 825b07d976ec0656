// Package metrics holds the metric families every provider shares. They are registered with
// component-base's legacyregistry, which is what the CCM serves on /metrics; a collector
// registered with prometheus.MustRegister would never show up there.
package metrics

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const namespace = "ccm"

// Result values of the result label.
const (
	ResultOK        = "ok"
	ResultError     = "error"
	ResultThrottled = "throttled"
)

var (
	// CloudAPIRequests counts every call to a cloud API.
	CloudAPIRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      namespace,
		Name:           "cloud_api_requests_total",
		Help:           "Cloud API calls by provider, cloud service, operation and result (ok, error, throttled).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider", "service", "operation", "result"})

	// CloudAPIDuration is the latency of cloud API calls.
	CloudAPIDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      namespace,
		Name:           "cloud_api_request_duration_seconds",
		Help:           "Latency of cloud API calls by provider, cloud service and operation.",
		Buckets:        []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		StabilityLevel: metrics.ALPHA,
	}, []string{"provider", "service", "operation"})
)

var registerOnce sync.Once

// Register registers every family of this package with legacyregistry. It is safe to call
// more than once; providers call it from their factory.
func Register() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(CloudAPIRequests, CloudAPIDuration,
			ReconcileTotal, ReconcileDuration, NodeDeletionsHeld, IPPoolAddresses,
			OrphanedLoadBalancers, OrphanedLoadBalancersDeleted, ConfigReloads)
	})
}

// ObserveCloudCall records one cloud API call that started at start. throttled says whether the
// cloud refused it for rate (the provider knows its cloud's throttling errors; see Classify).
func ObserveCloudCall(provider, service, operation string, start time.Time, result string) {
	CloudAPIRequests.WithLabelValues(provider, service, operation, result).Inc()
	CloudAPIDuration.WithLabelValues(provider, service, operation).Observe(time.Since(start).Seconds())
}

// Classify turns an error into a result label; isThrottle tells a provider's throttling
// errors apart from the rest (it may be nil).
func Classify(err error, isThrottle func(error) bool) string {
	switch {
	case err == nil:
		return ResultOK
	case isThrottle != nil && isThrottle(err):
		return ResultThrottled
	default:
		return ResultError
	}
}
