package ippool

import (
	"net/netip"
	"slices"

	"github.com/ccm-project/ccm/common/metrics"
)

// ReportUsage sets the ccm_ip_pool_addresses gauges (total and used) of provider's pools, used
// being the addresses in use (the keys of a provider's address -> holder map).
func ReportUsage[V any](provider string, pools []*Pool, used map[netip.Addr]V) {
	for _, p := range pools {
		n := 0
		for a := range used {
			if p.Contains(a) {
				n++
			}
		}
		metrics.IPPoolAddresses.WithLabelValues(provider, p.Name(), "total").Set(p.Size())
		metrics.IPPoolAddresses.WithLabelValues(provider, p.Name(), "used").Set(float64(n))
	}
}

// ForgetUsage drops the ccm_ip_pool_addresses gauges of the pools of old that now has no pool
// of that name (a pool removed from the cloud config while ccm runs).
func ForgetUsage(provider string, old, now []*Pool) {
	for _, p := range old {
		if !slices.ContainsFunc(now, func(q *Pool) bool { return q.Name() == p.Name() }) {
			metrics.IPPoolAddresses.DeleteLabelValues(provider, p.Name(), "total")
			metrics.IPPoolAddresses.DeleteLabelValues(provider, p.Name(), "used")
		}
	}
}
