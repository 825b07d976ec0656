package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

const manyServices = 200

// 200 Services created at once each get a distinct address; a restarted ccm changes no address
// and makes no write to the dummy cloud's store.
func TestManyServicesAndRestart(t *testing.T) {
	ctx := context.Background()
	cfg := "[Instance \"it-many-node\"]\ninternal-ip = 10.5.0.1\n\n[Pool \"big\"]\ncidr = 100.64.0.0/22\n"
	first := startCCM(t, "ccm-many-1", cfg)
	newNode(t, "it-many-node")
	ns := namespace(t)

	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, manyServices)
	for i := range manyServices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := env.Client.CoreV1().Services(ns).Create(ctx, testenv.LoadBalancerService(ns, fmt.Sprintf("svc-%03d", i), 80), metav1.CreateOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ips := map[string]string{} // service -> IP
	eventually(t, 60*time.Second, fmt.Sprintf("%d Services with an address", manyServices), func() (bool, error) {
		list, err := env.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		clear(ips)
		for _, s := range list.Items {
			if got := ingressIPs(&s); len(got) == 1 {
				ips[s.Name] = got[0]
			}
		}
		return len(ips) == manyServices, fmt.Errorf("%d of %d", len(ips), manyServices)
	})
	t.Logf("%d Services had addresses %v after creation", manyServices, time.Since(start).Round(10*time.Millisecond))
	owner := map[string]string{}
	for svc, ip := range ips {
		if other, dup := owner[ip]; dup {
			t.Fatalf("%s handed to both %s and %s", ip, other, svc)
		}
		owner[ip] = svc
	}

	versions := storeVersions(t)
	first.Stop(10 * time.Second)
	second := startCCM(t, "ccm-many-2", cfg)
	// The restarted service controller ensures every Service once; wait until it has.
	eventually(t, 60*time.Second, "the restarted ccm ensured every Service", func() (bool, error) {
		n, err := metricValue(t, second, `ccm_reconcile_total{kind="loadbalancer",operation="ensure",provider="dummy",result="ok"}`)
		return n >= manyServices, fmt.Errorf("%v ensures, %v", n, err)
	})
	writes, err := metricValue(t, second, `ccm_cloud_api_requests_total{operation="Update",provider="dummy",result="ok",service="loadbalancer-store"}`)
	if err != nil {
		t.Fatal(err)
	}
	creates, _ := metricValue(t, second, `ccm_cloud_api_requests_total{operation="Create",provider="dummy"`)
	if writes+creates != 0 {
		t.Errorf("restart with nothing changed made %v store writes, want 0", writes+creates)
	}
	if after := storeVersions(t); fmt.Sprint(after) != fmt.Sprint(versions) {
		t.Errorf("store ConfigMaps changed on restart: %v -> %v", versions, after)
	}
	list, err := env.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if got := ingressIPs(&s); len(got) != 1 || got[0] != ips[s.Name] {
			t.Errorf("%s: address %v after restart, was %s", s.Name, got, ips[s.Name])
		}
	}
	t.Logf("restart: %d Services re-ensured, %v store writes", manyServices, writes+creates)

	// Delete them while the second ccm runs (the namespace clean-up would run after it stops).
	start = time.Now()
	deleteServices(t, ns)
	t.Logf("%d Services deleted and their addresses released in %v", manyServices, time.Since(start).Round(10*time.Millisecond))
}

// storeVersions returns the resourceVersion of each dummy store ConfigMap.
func storeVersions(t *testing.T) map[string]string {
	t.Helper()
	list, err := env.Client.CoreV1().ConfigMaps("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=ccm-dummy"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, cm := range list.Items {
		out[cm.Name] = cm.ResourceVersion
	}
	if len(out) == 0 {
		t.Fatal("no store ConfigMaps")
	}
	return out
}
