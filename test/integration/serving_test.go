package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := testenv.InsecureHTTPClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The secure port serves /healthz to anyone (probes) and /metrics only to an identity that
// RBAC allows: the metrics-reader ClusterRole of deploy/base.
func TestSecureServing(t *testing.T) {
	ctx := context.Background()
	c := startCCM(t, "ccm-serving", lbConfig)
	base := fmt.Sprintf("https://127.0.0.1:%d", c.Port)
	eventually(t, 30*time.Second, "/healthz ok", func() (bool, error) {
		code, body := get(t, base+"/healthz", "")
		return code == 200 && body == "ok", fmt.Errorf("%d %s", code, body)
	})

	scraper := metricsToken(t)

	if code, _ := get(t, base+"/metrics", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("anonymous /metrics: %d, want 401 or 403", code)
	}
	if code, _ := get(t, base+"/metrics", c.Token); code != http.StatusForbidden {
		t.Errorf("/metrics as an identity without the metrics-reader role: %d, want 403", code)
	}
	// Metric vectors show on /metrics once they have a series: make the provider work.
	newNode(t, "it-lb-node", true)
	ns := namespace(t)
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, testenv.LoadBalancerService(ns, "scraped", 80), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "ccm metric families on /metrics", func() (bool, error) {
		code, body := get(t, base+"/metrics", scraper)
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

// metricsToken returns the token of a ServiceAccount bound to the metrics-reader ClusterRole of
// deploy/base, as a Prometheus would be.
func metricsToken(t *testing.T) string {
	t.Helper()
	scraperOnce.Do(func() {
		ctx := context.Background()
		sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: "kube-system"}}
		if _, scraperErr = env.Client.CoreV1().ServiceAccounts("kube-system").Create(ctx, sa, metav1.CreateOptions{}); scraperErr != nil {
			return
		}
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cloud-controller-manager:metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: "kube-system"}},
		}
		if _, scraperErr = env.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); scraperErr != nil {
			return
		}
		scraperToken, scraperErr = env.ServiceAccountKubeconfig(ctx, "kube-system", "scraper", filepath.Join(env.Dir, "scraper.kubeconfig"))
	})
	if scraperErr != nil {
		t.Fatal(scraperErr)
	}
	return scraperToken
}

// metricValue scrapes c's /metrics and sums the samples whose line starts with series
// (a metric name with some of its labels, e.g. `ccm_reconcile_total{kind="loadbalancer"`).
func metricValue(t *testing.T, c *testenv.CCM, series string) (float64, error) {
	t.Helper()
	code, body := get(t, fmt.Sprintf("https://127.0.0.1:%d/metrics", c.Port), metricsToken(t))
	if code != 200 {
		return 0, fmt.Errorf("/metrics: %d", code)
	}
	var sum float64
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, series) {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				return 0, err
			}
			sum += v
		}
	}
	return sum, nil
}
