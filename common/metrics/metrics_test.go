package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

func TestRegisteredInLegacyRegistry(t *testing.T) {
	Register()
	Register() // twice is fine
	ObserveCloudCall("test", "ec2", "DescribeInstances", time.Now(), ResultOK)
	ObserveReconcile("test", "loadbalancer", "ensure", time.Now(), errors.New("boom"))
	NodeDeletionsHeld.WithLabelValues("test", "cloud_error").Inc()
	IPPoolAddresses.WithLabelValues("test", "default", "used").Set(3)
	OrphanedLoadBalancers.WithLabelValues("test").Set(1)
	OrphanedLoadBalancersDeleted.WithLabelValues("test").Inc()
	ConfigReloads.WithLabelValues("test", "applied").Inc()

	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, want := range []string{
		"ccm_cloud_api_requests_total", "ccm_cloud_api_request_duration_seconds",
		"ccm_reconcile_total", "ccm_reconcile_duration_seconds",
		"ccm_node_deletions_held_total", "ccm_ip_pool_addresses",
		"ccm_orphaned_load_balancers", "ccm_orphaned_load_balancers_deleted_total",
		"ccm_config_reload_total",
	} {
		if !got[want] {
			t.Errorf("%s not in legacyregistry", want)
		}
	}
	want := `
# HELP ccm_reconcile_total [ALPHA] Provider reconciles by provider, kind (loadbalancer, instance), operation and result.
# TYPE ccm_reconcile_total counter
ccm_reconcile_total{kind="loadbalancer",operation="ensure",provider="test",result="error"} 1
`
	if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(want), "ccm_reconcile_total"); err != nil {
		t.Error(err)
	}
}

func TestTransportClassifies(t *testing.T) {
	Register()
	codes := []int{200, 429, 500, 503}
	i := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(codes[i])
		i++
	}))
	defer srv.Close()
	client := &http.Client{Transport: &Transport{Provider: "tt", Service: "svc",
		Operation: func(r *http.Request) string { return r.URL.Query().Get("Action") }}}
	for range codes {
		resp, err := client.Get(srv.URL + "/?Action=Describe")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for result, want := range map[string]float64{ResultOK: 1, ResultThrottled: 2, ResultError: 1} {
		got, err := testutil.GetCounterMetricValue(CloudAPIRequests.WithLabelValues("tt", "svc", "Describe", result))
		if err != nil || got != want {
			t.Errorf("result %s: got %v (%v), want %v", result, got, err, want)
		}
	}
}
