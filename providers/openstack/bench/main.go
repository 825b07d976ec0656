// Command bench measures the OpenStack provider against the fake OpenStack on the local
// control plane: with a provisioning delay D per load balancer, the time until N new
// LoadBalancer Services all have an address, the Keystone tokens issued during the run, and
// the cloud calls (and writes) of a ccm restart with nothing changed.
//
//	CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./providers/openstack/bench
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

func main() {
	services := flag.Int("services", 100, "LoadBalancer Services created at once")
	nodes := flag.Int("nodes", 3, "Nodes (servers) behind every load balancer")
	delay := flag.Duration("provision-delay", 10*time.Second, "D: how long each new load balancer stays PENDING_CREATE in the fake")
	latency := flag.Duration("latency", 5*time.Millisecond, "latency of every fake OpenStack call")
	extra := flag.String("ccm-args", "", "more ccm flags, space-separated (e.g. --concurrent-service-syncs=1)")
	flag.Parse()
	if err := run(*services, *nodes, *delay, *latency, strings.Fields(*extra)); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type row struct{ name, value, goal string }

func run(nSvc, nNodes int, d, latency time.Duration, extra []string) error {
	bin := os.Getenv("CCM_BIN_DIR")
	if bin == "" {
		return fmt.Errorf("CCM_BIN_DIR is not set (the folder with ccm-openstack; make build-openstack)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	if _, err := env.Kubectl(ctx, "apply", "-k", filepath.Join(root, "deploy", "openstack")); err != nil {
		return err
	}
	cloud := fake.New(fake.Options{ProvisionDelay: d, UpdateDelay: 200 * time.Millisecond})
	cloud.SetLatency(latency)
	if _, err := cloud.Start(); err != nil {
		return err
	}
	defer cloud.Close()
	conf := filepath.Join(env.Dir, "cloud.conf")
	if err := os.WriteFile(conf, []byte(cloudConfig(cloud)), 0o600); err != nil {
		return err
	}
	for i := range nNodes {
		name := fmt.Sprintf("bench-node-%d", i)
		cloud.AddServer(fake.ServerSpec{Name: name, IPs: []string{fmt.Sprintf("10.0.%d.%d", i/250, i%250+10)}})
		if err := testenv.RegisterNode(ctx, env.Client, name); err != nil {
			return err
		}
	}
	start := func(name string) (*testenv.CCM, error) {
		return env.StartCCM(ctx, testenv.CCMOptions{Name: name, Binary: filepath.Join(bin, "ccm-openstack"), Provider: "openstack", CloudConfig: conf, Args: extra})
	}
	ccm, err := start("ccm-1")
	if err != nil {
		return err
	}
	if err := waitFor(ctx, 60*time.Second, "nodes initialised", func() (bool, error) {
		list, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, n := range list.Items {
			if n.Spec.ProviderID == "" {
				return false, nil
			}
		}
		return len(list.Items) == nNodes, nil
	}); err != nil {
		return err
	}

	t0 := time.Now()
	for i := range nSvc {
		svc := testenv.LoadBalancerService("default", fmt.Sprintf("bench-%03d", i), 80)
		if _, err := env.Client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	var done []time.Duration
	if err := waitFor(ctx, 5*time.Minute, "every Service addressed", func() (bool, error) {
		list, err := env.Client.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		n := 0
		for _, s := range list.Items {
			if len(s.Status.LoadBalancer.Ingress) > 0 {
				n++
			}
		}
		for len(done) < n {
			done = append(done, time.Since(t0))
		}
		return n == nSvc, nil
	}); err != nil {
		return fmt.Errorf("%w (ccm log %s)", err, ccm.LogPath)
	}
	all := time.Since(t0)
	sort.Slice(done, func(i, j int) bool { return done[i] < done[j] })
	quiet(ctx, cloud, 2*time.Second)
	tokens := cloud.TokensIssued()
	createCalls := cloud.Calls()

	// Restart with nothing changed: a new process re-ensures every Service.
	ccm.Stop(10 * time.Second)
	before := cloud.Calls()
	beforeWrites := cloud.Writes()
	if _, err := start("ccm-2"); err != nil {
		return err
	}
	if err := waitFor(ctx, 3*time.Minute, "the restarted ccm to look at every Service", func() (bool, error) {
		return cloud.Calls()["octavia.ListLoadBalancers"]-before["octavia.ListLoadBalancers"] >= nSvc, nil
	}); err != nil {
		return err
	}
	quiet(ctx, cloud, 3*time.Second)
	after := cloud.Calls()
	restartCalls := 0
	for op, n := range after {
		if op != "keystone.CreateToken" {
			restartCalls += n - before[op]
		}
	}

	rows := []row{
		{"provisioning delay D per load balancer", d.String(), ""},
		{fmt.Sprintf("time until %d new LB Services all have an IP", nSvc), fmt.Sprintf("%.1fs (%.2f×D)", all.Seconds(), all.Seconds()/d.Seconds()), "≈1–2×D"},
		{"  first / median Service addressed", fmt.Sprintf("%.1fs / %.1fs", done[0].Seconds(), done[len(done)/2].Seconds()), ""},
		{"Keystone tokens issued (nodes + create run)", fmt.Sprint(tokens), "1"},
		{"octavia creates / listener or member writes during create", fmt.Sprintf("%d / %d", createCalls["octavia.CreateLoadBalancer"], createCalls["octavia.CreateListener"]+createCalls["octavia.BatchUpdateMembers"]), fmt.Sprintf("%d / 0", nSvc)},
		{"restart with nothing changed: cloud calls (per Service)", fmt.Sprintf("%d (%.1f)", restartCalls, float64(restartCalls)/float64(nSvc)), "reads only"},
		{"restart with nothing changed: cloud writes", fmt.Sprint(cloud.Writes() - beforeWrites), "0"},
		{"restart: Keystone tokens", fmt.Sprint(after["keystone.CreateToken"] - before["keystone.CreateToken"]), "1 (new process)"},
	}
	fmt.Printf("\nOpenStack provider, %d Services × %d nodes, ccm args %v, fake latency %v\n\n", nSvc, nNodes, extra, latency)
	fmt.Printf("| %-58s | %-22s | %-16s |\n|%s|%s|%s|\n", "figure", "value", "goal", strings.Repeat("-", 60), strings.Repeat("-", 24), strings.Repeat("-", 18))
	for _, r := range rows {
		fmt.Printf("| %-58s | %-22s | %-16s |\n", r.name, r.value, r.goal)
	}
	fmt.Printf("\nrestart calls by operation: %s\n", diff(before, after))
	return nil
}

// quiet waits until the fake has seen no call for d.
func quiet(ctx context.Context, cloud *fake.Cloud, d time.Duration) {
	last, since := cloud.CallSummary(), time.Now()
	for time.Since(since) < d && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
		if s := cloud.CallSummary(); s != last {
			last, since = s, time.Now()
		}
	}
}

func diff(before, after map[string]int) string {
	var out []string
	for op, n := range after {
		if d := n - before[op]; d > 0 {
			out = append(out, fmt.Sprintf("%s=%d", op, d))
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("timed out waiting for %s (last error: %v)", what, last)
}

func cloudConfig(f *fake.Cloud) string {
	return fmt.Sprintf(`[Global]
auth-url = %s
username = %s
password = "%s"
tenant-name = %s
domain-name = %s
region = %s

[LoadBalancer]
subnet-id = %s
floating-network-id = %s
pending-retry = 2s
`, f.AuthURL(), f.Username(), f.Password(), f.ProjectName(), f.DomainName(), f.Region(), fake.PrivateSubnetID, fake.PublicNetworkID)
}
