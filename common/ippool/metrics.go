package ippool

import (
	"net/netip"

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
