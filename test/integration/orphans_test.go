package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/util/retry"

	"github.com/ccm-project/ccm/common/testenv"
)

// Load balancers orphaned the way issue 16 describes: the ccm is SIGKILLed, the Services'
// finalizers are removed by hand and the Services deleted (one is made again under its name,
// with a new UID). A ccm with --orphan-grace-period=0 reports both orphans (log, metric, an
// Event on the Service of that name) and deletes nothing; one with a short grace deletes both
// once it has passed, which frees the pool's two addresses for the Service made again.
// `ccm gc --dry-run` lists them in between and deletes nothing.
func TestOrphanedLoadBalancersCollected(t *testing.T) {
	ctx := context.Background()
	const cluster = "it-orphans"
	cfg := "[Instance \"it-orphan-node\"]\ninternal-ip = 10.7.0.1\n\n[Pool \"two\"]\nrange = 100.66.0.1-100.66.0.2\n"
	args := []string{"--cluster-name=" + cluster, "--orphan-collection-period=1s"}
	first := startCCM(t, "ccm-orphans-1", cfg, args...)
	newNode(t, "it-orphan-node")
	ns := namespace(t)
	svcs := env.Client.CoreV1().Services(ns)
	for _, name := range []string{"web", "api"} {
		if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, name, 80), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "both Services have an address", func() (bool, error) {
		list, err := svcs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, s := range list.Items {
			n += len(ingressIPs(&s))
		}
		return n == 2, fmt.Errorf("%d addresses", n)
	})

	first.Kill()
	for _, name := range []string{"web", "api"} {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s, err := svcs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.Finalizers = nil
			_, err = svcs.Update(ctx, s, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := svcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "both Services deleted", func() (bool, error) {
		list, err := svcs.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})
	again, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, "api", 80), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	webLB, apiLB := "dummy_"+cluster+"_"+ns+"_web", "dummy_"+cluster+"_"+ns+"_api"

	// gc --dry-run: both listed as orphans, nothing deleted.
	out := gcRun(t, cfg, cluster, "--dry-run")
	for _, want := range []string{webLB, apiLB, "2 load balancers of cluster " + cluster + ", 2 orphaned; dry run: nothing deleted"} {
		if !strings.Contains(out, want) {
			t.Errorf("gc --dry-run output lacks %q:\n%s", want, out)
		}
	}

	// Grace 0: reported, never deleted.
	reporter := startCCM(t, "ccm-orphans-2", cfg, append(args, "--orphan-grace-period=0")...)
	eventually(t, 30*time.Second, "the orphans reported", func() (bool, error) {
		n, err := metricValue(t, reporter, `ccm_orphaned_load_balancers{provider="dummy"}`)
		log := reporter.Log()
		return n == 2 && strings.Contains(log, `"Orphaned load balancer found" loadBalancer="`+webLB+`"`) &&
			strings.Contains(log, `"Orphaned load balancer found" loadBalancer="`+apiLB+`"`), fmt.Errorf("gauge %v (%v)", n, err)
	})
	eventually(t, 10*time.Second, "an OrphanedLoadBalancer Event on the Service made again", func() (bool, error) {
		evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("involvedObject.name", "api"), fields.OneTermEqualSelector("reason", "OrphanedLoadBalancer")).String()})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == v1.EventTypeWarning && e.InvolvedObject.UID == again.UID && strings.Contains(e.Message, "not deleted") {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events", len(evs.Items))
	})
	time.Sleep(4 * time.Second) // four more rounds
	if strings.Contains(reporter.Log(), "Orphaned load balancer deleted") {
		t.Error("a ccm with --orphan-grace-period=0 deleted a load balancer")
	}
	if d, _ := metricValue(t, reporter, `ccm_orphaned_load_balancers_deleted_total{provider="dummy"}`); d != 0 {
		t.Errorf("deleted counter %v with grace 0", d)
	}
	if got := storeRecords(t); !got[webLB] || !got[apiLB] {
		t.Fatalf("records after the grace-0 ccm: %v", got)
	}
	if s, _ := svcs.Get(ctx, "api", metav1.GetOptions{}); len(ingressIPs(s)) != 0 {
		t.Errorf("the Service made again got %v while both addresses were held by orphans", ingressIPs(s))
	}
	reporter.Kill()

	// A short grace: deleted once it has passed; the addresses go to the Service made again.
	start := time.Now()
	collector := startCCM(t, "ccm-orphans-3", cfg, append(args, "--orphan-grace-period=3s")...)
	eventually(t, 30*time.Second, "both orphans deleted", func() (bool, error) {
		d, err := metricValue(t, collector, `ccm_orphaned_load_balancers_deleted_total{provider="dummy"}`)
		return d == 2, fmt.Errorf("deleted %v (%v)", d, err)
	})
	took := time.Since(start)
	found := strings.Index(collector.Log(), `"Orphaned load balancer found" loadBalancer="`+webLB+`"`)
	deleted := strings.Index(collector.Log(), `"Orphaned load balancer deleted" loadBalancer="`+webLB+`"`)
	if found < 0 || deleted < found {
		t.Errorf("log: found at %d, deleted at %d; want a report before the deletion", found, deleted)
	}
	if took < 3*time.Second {
		t.Errorf("deleted %v after the start, before the 3s grace", took)
	}
	if got := storeRecords(t); got[webLB] {
		t.Errorf("the orphan's record is still there: %v", got)
	}
	eventually(t, 40*time.Second, "the Service made again gets an address", func() (bool, error) {
		s, err := svcs.Get(ctx, "api", metav1.GetOptions{})
		return err == nil && len(ingressIPs(s)) == 1, err
	})
	eventually(t, 10*time.Second, "no orphan left", func() (bool, error) {
		n, err := metricValue(t, collector, `ccm_orphaned_load_balancers{provider="dummy"}`)
		return n == 0, fmt.Errorf("gauge %v (%v)", n, err)
	})
	// gc now finds the new load balancer, its Service's own.
	out = gcRun(t, cfg, cluster, "--dry-run")
	if !strings.Contains(out, "1 load balancers of cluster "+cluster+", 0 orphaned") {
		t.Errorf("gc --dry-run after the collection:\n%s", out)
	}
	t.Logf("orphans deleted %v after the ccm started with a 3s grace", took.Round(100*time.Millisecond))
	deleteServices(t, ns) // while a ccm still runs (the namespace's cleanup comes after it stops)
}

// gcRun runs `ccm gc` with the admin kubeconfig and returns its output.
func gcRun(t *testing.T, cfg, cluster string, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cloud.conf")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"gc", "--cloud-provider=dummy", "--cloud-config=" + path, "--cluster-name=" + cluster,
		"--kubeconfig=" + env.KubeconfigPath}, extra...)
	out, err := exec.Command(os.Getenv("CCM_BINARY"), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ccm %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// storeRecords returns the names of the dummy store's records of every cluster (data keys
// "namespace_name" of ccm's own cluster are reported as the load balancer name of it-orphans).
func storeRecords(t *testing.T) map[string]bool {
	t.Helper()
	list, err := env.Client.CoreV1().ConfigMaps("kube-system").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=ccm-dummy"})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, cm := range list.Items {
		for k := range cm.Data {
			if ns, name, ok := strings.Cut(k, "_"); ok && !strings.Contains(name, "_") {
				k = "dummy_it-orphans_" + ns + "_" + name
			}
			out[k] = true
		}
	}
	return out
}
