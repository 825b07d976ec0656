package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

func get(t *testing.T, c *testenv.CCM, path, token string) (int, string) {
	t.Helper()
	code, body, err := c.Get(path, token)
	if err != nil {
		return 0, err.Error()
	}
	return code, body
}

// The secure port serves /healthz to anyone (probes) and /metrics only to an identity that
// RBAC allows: the metrics-reader ClusterRole of deploy/base.
func TestSecureServing(t *testing.T) {
	ctx := context.Background()
	c := startCCM(t, "ccm-serving", lbConfig)
	eventually(t, 30*time.Second, "/healthz ok", func() (bool, error) {
		code, body := get(t, c, "/healthz", "")
		return code == 200 && body == "ok", fmt.Errorf("%d %s", code, body)
	})

	scraper := metricsToken(t)

	if code, _ := get(t, c, "/metrics", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("anonymous /metrics: %d, want 401 or 403", code)
	}
	if code, _ := get(t, c, "/metrics", c.Token); code != http.StatusForbidden {
		t.Errorf("/metrics as an identity without the metrics-reader role: %d, want 403", code)
	}
	// Metric vectors show on /metrics once they have a series: make the provider work.
	newNode(t, "it-lb-node")
	ns := namespace(t)
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, testenv.LoadBalancerService(ns, "scraped", 80), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "ccm metric families on /metrics", func() (bool, error) {
		code, body := get(t, c, "/metrics", scraper)
		if code != 200 {
			return false, fmt.Errorf("status %d", code)
		}
		for _, want := range []string{
			`ccm_cloud_api_requests_total{operation="InstanceMetadata",provider="dummy",result="ok",service="inventory"}`,
			`ccm_reconcile_total{kind="loadbalancer",operation="ensure",provider="dummy",result="ok"}`,
			`ccm_ip_pool_addresses{pool="tiny",provider="dummy",state="used"} 1`,
			"# HELP ccm_dummy_inventory_reload_errors_total",
		} {
			if !strings.Contains(body, want) {
				return false, fmt.Errorf("%s missing; have:\n%s", want, grepLines(body, "ccm_"))
			}
		}
		return true, nil
	})
}

func grepLines(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

var (
	scraperOnce  sync.Once
	scraperToken string
	scraperErr   error
)

// metricsToken returns a token allowed to read the ccm's /metrics (created once per run).
func metricsToken(t *testing.T) string {
	t.Helper()
	scraperOnce.Do(func() { scraperToken, scraperErr = env.MetricsReaderToken(context.Background()) })
	if scraperErr != nil {
		t.Fatal(scraperErr)
	}
	return scraperToken
}

// metricValue sums c's samples of series, scraped with the metrics-reader token.
func metricValue(t *testing.T, c *testenv.CCM, series string) (float64, error) {
	t.Helper()
	return c.Metric(metricsToken(t), series)
}
