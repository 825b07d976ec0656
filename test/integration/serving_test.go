package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
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

	// A scraper ServiceAccount bound to the metrics-reader role of deploy/base.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: "kube-system"}}
	if _, err := env.Client.CoreV1().ServiceAccounts("kube-system").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cloud-controller-manager:metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "scraper", Namespace: "kube-system"}},
	}
	if _, err := env.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scraper, err := env.ServiceAccountKubeconfig(ctx, "kube-system", "scraper", t.TempDir()+"/scraper.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}

	if code, _ := get(t, base+"/metrics", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("anonymous /metrics: %d, want 401 or 403", code)
	}
	if code, _ := get(t, base+"/metrics", c.Token); code != http.StatusForbidden {
		t.Errorf("/metrics as an identity without the metrics-reader role: %d, want 403", code)
	}
	// Metric vectors show on /metrics once they have a series: make the provider work.
	newNode(t, "it-lb-node", true)
	ns := namespace(t)
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, lbService(ns, "scraped", 80), metav1.CreateOptions{}); err != nil {
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
