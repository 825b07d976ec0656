package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

// A load balancer record deleted by hand is put back by the running ccm's drift resync,
// without any change to the Service: the repair Event says what was repaired, and the sync
// writes nothing else (no Ensuring/Ensured pair, no status patch).
func TestDriftRepairedByResync(t *testing.T) {
	startCCM(t, "ccm-drift", "[Global]\nregion = lab\n\n[Pool \"drift\"]\nrange = 192.0.2.60-192.0.2.61\n",
		"--load-balancer-resync-period=2s")
	newNode(t, "it-drift-node")
	ns := namespace(t)
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)
	if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, "web", 80), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var svc *v1.Service
	eventually(t, 30*time.Second, "web has an address", func() (bool, error) {
		var err error
		svc, err = svcs.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) == 1, err
	})
	events := func(reason string) int {
		evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=" + reason})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range evs.Items {
			n += int(max(e.Count, 1))
		}
		return n
	}
	// Let any sync the creation queued finish before counting.
	time.Sleep(3 * time.Second)
	ensured := events("EnsuredLoadBalancer")
	svc, _ = svcs.Get(ctx, "web", metav1.GetOptions{})
	rv := svc.ResourceVersion

	key := ns + "_web"
	cms, err := env.Client.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=ccm-dummy"})
	if err != nil {
		t.Fatal(err)
	}
	removed := false
	for i := range cms.Items {
		cm := &cms.Items[i]
		if _, ok := cm.Data[key]; ok {
			delete(cm.Data, key)
			if _, err := env.Client.CoreV1().ConfigMaps("kube-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			removed = true
		}
	}
	if !removed {
		t.Fatalf("no store record %s to delete", key)
	}
	eventually(t, 20*time.Second, "the record put back and a repair Event", func() (bool, error) {
		back := false
		for _, k := range storeKeys(t, ns) {
			back = back || k == "web"
		}
		return back && events("LoadBalancerDriftRepaired") > 0, nil
	})
	if n := events("EnsuredLoadBalancer"); n != ensured {
		t.Errorf("EnsuredLoadBalancer Events %d after the repair, %d before: a drift resync should record only the repair", n, ensured)
	}
	now, _ := svcs.Get(ctx, "web", metav1.GetOptions{})
	if now.ResourceVersion != rv || strings.Join(ingressIPs(now), ",") != strings.Join(ingressIPs(svc), ",") {
		t.Errorf("the Service was written (resourceVersion %s -> %s, ingress %v -> %v); want no write", rv, now.ResourceVersion, ingressIPs(svc), ingressIPs(now))
	}
}
