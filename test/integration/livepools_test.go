package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
)

const livePoolsHead = `
[Global]
region = lab

[Instance "it-live-node"]
internal-ip = 10.2.0.9
`

// mountConfig writes the cloud config as the kubelet mounts a ConfigMap: the file's path goes
// through the ..data symlink, and an update is a new directory and an atomic swap of ..data.
func mountConfig(t *testing.T, dir, content string) {
	t.Helper()
	ts := filepath.Join(dir, fmt.Sprintf("..%d", time.Now().UnixNano()))
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "cloud.conf"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// The pools change under a running ccm (a ConfigMap update, as the kubelet makes it): no
// Service's address changes; Services whose address left every pool keep it, with a Warning;
// the next Service gets an address of the new pools; a bad change is refused and counted, and
// the pools before it stay. It prints the time from a config change to the next Service's
// address.
func TestLivePools(t *testing.T) {
	dir := t.TempDir()
	mountConfig(t, dir, livePoolsHead+"\n[Pool \"first\"]\nrange = 192.0.2.60-192.0.2.63\n")
	path := filepath.Join(dir, "cloud.conf")
	if err := os.Symlink("..data/cloud.conf", path); err != nil {
		t.Fatal(err)
	}
	const interval = 250 * time.Millisecond
	// ccm's own Pod, as the downward API names it: a refused change is a Warning on it.
	c := runCCM(t, testenv.CCMOptions{Name: "ccm-live", Provider: "dummy", CloudConfig: path,
		Args: []string{"--controllers=cloud-node,service", "--cloud-config-reload-interval=" + interval.String()},
		Env:  []string{"POD_NAME=ccm-live-pod", "POD_NAMESPACE=kube-system"}})
	newNode(t, "it-live-node")
	ns := namespace(t)
	ctx := context.Background()
	svcs := env.Client.CoreV1().Services(ns)
	waitIP := func(name string) string {
		var ip string
		eventually(t, 30*time.Second, name+" has an ingress IP", func() (bool, error) {
			s, err := svcs.Get(ctx, name, metav1.GetOptions{})
			if err == nil && len(s.Status.LoadBalancer.Ingress) > 0 {
				ip = s.Status.LoadBalancer.Ingress[0].IP
			}
			return ip != "", err
		})
		return ip
	}
	before := map[string]string{}
	for _, name := range []string{"s0", "s1", "s2", "s3"} {
		if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, name, 80), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"s0", "s1", "s2", "s3"} {
		before[name] = waitIP(name)
	}
	applied := func() float64 {
		v, _ := metricValue(t, c, `ccm_config_reload_total{provider="dummy",result="applied"}`)
		return v
	}
	// Two addresses leave every pool; a pool comes.
	start := time.Now()
	mountConfig(t, dir, livePoolsHead+"\n[Pool \"first\"]\nrange = 192.0.2.60-192.0.2.61\n\n[Pool \"second\"]\nrange = 198.51.100.60-198.51.100.61\n")
	eventually(t, 30*time.Second, "the change applied", func() (bool, error) { return applied() == 1, nil })
	seen := time.Since(start)
	if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, "next", 80), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next := waitIP("next")
	total := time.Since(start)
	if !strings.HasPrefix(next, "198.51.100.6") {
		t.Errorf("the next Service got %s, want an address of the new pool", next)
	}
	t.Logf("config change -> applied %v; -> the next Service's address %v (reload interval %v)", seen.Round(time.Millisecond), total.Round(time.Millisecond), interval)
	for name, ip := range before {
		if ip >= "192.0.2.62" {
			eventually(t, 10*time.Second, name+" warned that its address left the pools", func() (bool, error) {
				evs, err := env.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=LoadBalancerAddressOutsidePools"})
				return err == nil && len(evs.Items) > 0 && strings.Contains(evs.Items[0].Message, ip) && evs.Items[0].Type == v1.EventTypeWarning, err
			})
		}
	}
	// A bad change: refused, counted, the pools before it stay.
	mountConfig(t, dir, livePoolsHead+"\n[Pool \"first\"]\ncidr = 192.0.2.300/24\n")
	eventually(t, 30*time.Second, "the bad change refused", func() (bool, error) {
		v, err := metricValue(t, c, `ccm_config_reload_total{provider="dummy",result="rejected"}`)
		return v == 1, err
	})
	if log := c.Tail(400); !strings.Contains(log, "The changed cloud config is refused") || !strings.Contains(log, "line 9") {
		t.Errorf("no log line naming the bad line:\n%s", c.Tail(20))
	}
	eventually(t, 10*time.Second, "a Warning CloudConfigRejected on ccm's Pod naming the line", func() (bool, error) {
		evs, err := env.Client.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=ccm-live-pod,reason=CloudConfigRejected"})
		return err == nil && len(evs.Items) > 0 && evs.Items[0].Type == v1.EventTypeWarning && strings.Contains(evs.Items[0].Message, "line 9"), err
	})
	if _, err := svcs.Create(ctx, testenv.LoadBalancerService(ns, "after-bad", 80), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ip := waitIP("after-bad"); ip != "198.51.100.61" {
		t.Errorf("after the bad change a Service got %s, want 198.51.100.61 of the pools before it", ip)
	}
	changes := 0
	for name, ip := range before {
		s, err := svcs.Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) != 1 || s.Status.LoadBalancer.Ingress[0].IP != ip {
			changes++
			t.Errorf("%s: address %s changed: %v (%v)", name, ip, s.Status.LoadBalancer.Ingress, err)
		}
	}
	t.Logf("address changes of the %d Services served before the changes: %d", len(before), changes)
}
