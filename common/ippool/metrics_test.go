package ippool

import (
	"net/netip"
	"testing"

	"k8s.io/component-base/metrics/testutil"

	"github.com/ccm-project/ccm/common/metrics"
)

func TestReportUsage(t *testing.T) {
	metrics.Register()
	a, _ := New("a", &Config{CIDR: []string{"192.0.2.0/29"}}) // 6 usable
	b, _ := New("b", &Config{Range: []string{"198.51.100.1-198.51.100.4"}})
	used := map[netip.Addr][]string{
		netip.MustParseAddr("192.0.2.1"): {"ns/x"}, netip.MustParseAddr("192.0.2.2"): {"ns/y"},
		netip.MustParseAddr("203.0.113.9"): {"ns/z"}, // in neither pool
	}
	ReportUsage("pooltest", []*Pool{a, b}, used)
	for _, c := range []struct {
		pool, kind string
		want       float64
	}{{"a", "total", 6}, {"a", "used", 2}, {"b", "total", 4}, {"b", "used", 0}} {
		got, err := testutil.GetGaugeMetricValue(metrics.IPPoolAddresses.WithLabelValues("pooltest", c.pool, c.kind))
		if err != nil || got != c.want {
			t.Errorf("pool %s %s = %v (%v), want %v", c.pool, c.kind, got, err, c.want)
		}
	}
}
