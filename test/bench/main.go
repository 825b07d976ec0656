// Command bench measures the ccm (dummy provider) on the local control plane and prints the
// figures: time for N Nodes registered at once to be initialised, time for M LoadBalancer
// Services created at once to get an address, API server writes per Service, cloud calls per
// Node, and cloud writes on a restart with nothing changed. `make bench-dummy` runs it; the
// results also go to bin/bench/dummy.{md,json}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/ccm-project/ccm/common/testenv"
)

type result struct {
	Nodes                 int           `json:"nodes"`
	NodesAllInitialisedS  float64       `json:"nodes_all_initialised_s"`
	NodeP50S              float64       `json:"node_p50_s"`
	NodeP99S              float64       `json:"node_p99_s"`
	CloudCallsPerNode     float64       `json:"cloud_calls_per_node"`
	Services              int           `json:"services"`
	ServicesAllAddressedS float64       `json:"services_all_addressed_s"`
	ServiceP50S           float64       `json:"service_p50_s"`
	ServiceP99S           float64       `json:"service_p99_s"`
	APIWritesPerService   float64       `json:"api_writes_per_service"`
	MaxAPIWritesOneSvc    int           `json:"max_api_writes_one_service"`
	CloudWritesCreate     float64       `json:"cloud_writes_for_create"`
	RestartCloudWrites    float64       `json:"restart_cloud_writes"`
	NodeAddedCloudWrites  float64       `json:"node_added_cloud_writes"`
	NodeAddedAllUpdatedS  float64       `json:"node_added_all_lbs_updated_s"`
	NodeAddedLBsUpdated   int           `json:"node_added_lbs_updated"`
	Memory                *memoryResult `json:"memory,omitempty"`
}

func main() {
	nodes := flag.Int("nodes", 100, "Nodes registered at once")
	services := flag.Int("services", 1000, "LoadBalancer Services created at once")
	out := flag.String("out", "bin/bench", "folder for dummy.md and dummy.json")
	extra := flag.String("ccm-args", "", "more ccm flags, space-separated (e.g. --kube-api-qps=20 to compare with the library defaults)")
	memNodes := flag.Int("memory-nodes", 5000, "Nodes in the API server for the memory scenario (0 skips it)")
	memServices := flag.Int("memory-services", 10000, "LoadBalancer Services in the API server for the memory scenario")
	heap := flag.String("memory-heap-profile", "", "write the ccm's heap profile at the end of the memory scenario to this file")
	flag.Parse()
	r, err := run(*nodes, *services, strings.Fields(*extra))
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	report(r, *out)
	if *memNodes > 0 {
		if r.Memory, err = runMemory(*memNodes, *memServices, *heap); err != nil {
			fmt.Fprintln(os.Stderr, "bench: memory:", err)
			os.Exit(1)
		}
		report(r, *out)
	}
}

func run(nNodes, nServices int, extra []string) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	if _, err := env.Kubectl(ctx, "apply", "-k", filepath.Join(root, "deploy", "dummy")); err != nil {
		return nil, err
	}
	metricsToken, err := env.MetricsReaderToken(ctx)
	if err != nil {
		return nil, err
	}

	// Inventory for every Node, and a pool big enough for every Service.
	var cfg strings.Builder
	cfg.WriteString("[Global]\nregion = bench\n\n[Pool \"bench\"]\ncidr = 10.128.0.0/16\n\n")
	for i := range nNodes + 1 { // one more for the node-added scenario
		fmt.Fprintf(&cfg, "[Instance \"bench-node-%04d\"]\ninternal-ip = 10.0.%d.%d\nzone = zone-%d\n\n", i, i/250, i%250+1, i%3)
	}
	cfgPath := filepath.Join(env.Dir, "bench.conf")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	startCCM := func(name string) (*testenv.CCM, error) {
		c, err := env.StartCCM(ctx, testenv.CCMOptions{Name: name, Provider: "dummy", CloudConfig: cfgPath, Args: append([]string{"--v=1"}, extra...)})
		if err != nil {
			return nil, err
		}
		// Wait until it leads (it then has its controllers running).
		for !strings.Contains(c.Log(), "Successfully acquired lease") {
			if c.Exited() {
				return nil, fmt.Errorf("ccm exited: %s", c.Tail(20))
			}
			time.Sleep(50 * time.Millisecond)
		}
		return c, nil
	}
	ccm, err := startCCM("ccm-bench-1")
	if err != nil {
		return nil, err
	}
	r := &result{Nodes: nNodes, Services: nServices}

	// Nodes.
	fmt.Printf("bench: registering %d Nodes at once\n", nNodes)
	nodeDone, err := watchUntil(ctx, env, "nodes", nNodes, func(obj any) bool {
		n := obj.(*v1.Node)
		return n.Spec.ProviderID != "" && !hasTaint(n, testenv.UninitializedTaint)
	})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := parallel(nNodes, func(i int) error {
		return testenv.RegisterNode(ctx, env.Client, fmt.Sprintf("bench-node-%04d", i))
	}); err != nil {
		return nil, err
	}
	nodeTimes, _ := nodeDone()
	r.NodesAllInitialisedS, r.NodeP50S, r.NodeP99S = stats(nodeTimes, start)
	calls, err := ccm.Metric(metricsToken, `ccm_cloud_api_requests_total{`)
	if err != nil {
		return nil, err
	}
	r.CloudCallsPerNode = calls / float64(nNodes)

	// Services.
	fmt.Printf("bench: creating %d LoadBalancer Services at once\n", nServices)
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	svcDone, err := watchUntil(ctx, env, "services", nServices, func(obj any) bool {
		return len(obj.(*v1.Service).Status.LoadBalancer.Ingress) > 0
	})
	if err != nil {
		return nil, err
	}
	start = time.Now()
	if err := parallel(nServices, func(i int) error {
		_, err := env.Client.CoreV1().Services("bench").Create(ctx, testenv.LoadBalancerService("bench", fmt.Sprintf("svc-%05d", i), 80), metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	svcTimes, writes := svcDone()
	r.ServicesAllAddressedS, r.ServiceP50S, r.ServiceP99S = stats(svcTimes, start)
	time.Sleep(2 * time.Second) // late writes (there should be none) would show in the count
	total := 0
	for _, w := range writes() {
		total += w
		r.MaxAPIWritesOneSvc = max(r.MaxAPIWritesOneSvc, w)
	}
	r.APIWritesPerService = float64(total) / float64(nServices)

	up1, _ := ccm.Metric(metricsToken, `ccm_cloud_api_requests_total{operation="Update",provider="dummy"`)
	cr1, _ := ccm.Metric(metricsToken, `ccm_cloud_api_requests_total{operation="Create",provider="dummy"`)
	r.CloudWritesCreate = up1 + cr1

	// One Node added: every LB's member set changes, so one cloud write per LB is the floor.
	fmt.Printf("bench: adding one Node to %d LoadBalancer Services\n", nServices)
	writesNow := func() float64 {
		up, _ := ccm.Metric(metricsToken, `ccm_cloud_api_requests_total{operation="Update",provider="dummy"`)
		cr, _ := ccm.Metric(metricsToken, `ccm_cloud_api_requests_total{operation="Create",provider="dummy"`)
		return up + cr
	}
	// The dummy keeps one record per LB (with a fingerprint of its desired state, nodes
	// included) in ConfigMaps: an LB is updated when its fingerprint changes.
	fingerprints := func() (map[string]string, error) {
		cms, err := env.Client.CoreV1().ConfigMaps("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, cm := range cms.Items {
			if !strings.HasPrefix(cm.Name, "ccm-dummy-lb-") {
				continue
			}
			for k, v := range cm.Data {
				var rec struct{ Fingerprint string }
				if json.Unmarshal([]byte(v), &rec) == nil {
					out[k] = rec.Fingerprint
				}
			}
		}
		return out, nil
	}
	old, err := fingerprints()
	if err != nil {
		return nil, err
	}
	before := writesNow()
	start = time.Now()
	if err := testenv.RegisterNode(ctx, env.Client, fmt.Sprintf("bench-node-%04d", nNodes)); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		now, err := fingerprints()
		if err != nil {
			return nil, err
		}
		changed := 0
		for k, fp := range old {
			if now[k] != fp {
				changed++
			}
		}
		r.NodeAddedLBsUpdated = changed
		if changed == len(old) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.NodeAddedAllUpdatedS = time.Since(start).Seconds()
	time.Sleep(3 * time.Second) // more writes than LBs would show here
	r.NodeAddedCloudWrites = writesNow() - before

	// Restart with nothing changed.
	fmt.Println("bench: restarting the ccm with nothing changed")
	ccm.Stop(10 * time.Second)
	ccm2, err := startCCM("ccm-bench-2")
	if err != nil {
		return nil, err
	}
	for {
		n, err := ccm2.Metric(metricsToken, `ccm_reconcile_total{kind="loadbalancer",operation="ensure"`)
		if err == nil && n >= float64(nServices) {
			break
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("restarted ccm did not ensure every Service: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	up, _ := ccm2.Metric(metricsToken, `ccm_cloud_api_requests_total{operation="Update",provider="dummy"`)
	cr, _ := ccm2.Metric(metricsToken, `ccm_cloud_api_requests_total{operation="Create",provider="dummy"`)
	r.RestartCloudWrites = up + cr
	return r, nil
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// watchUntil follows resource with an informer (which re-lists if the API server closes a
// watch) and records, per object, when done(obj) first held and how many updates it had by
// then (each is one API write by the ccm). The returned func waits until want objects are done.
func watchUntil(ctx context.Context, env *testenv.Env, resource string, want int, done func(any) bool) (func() (map[string]time.Time, func() map[string]int), error) {
	var mu sync.Mutex
	at := map[string]time.Time{}
	updates := map[string]int{}
	finished := make(chan struct{})
	observe := func(obj any, update bool) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if update {
			updates[m.GetName()]++
		}
		if _, seen := at[m.GetName()]; !seen && done(obj) {
			at[m.GetName()] = time.Now()
			if len(at) == want {
				close(finished)
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(map[string]string{"nodes": "", "services": "bench"}[resource]))
	var inf cache.SharedIndexInformer
	if resource == "nodes" {
		inf = factory.Core().V1().Nodes().Informer()
	} else {
		inf = factory.Core().V1().Services().Informer()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { observe(obj, false) },
		UpdateFunc: func(old, obj any) {
			observe(obj, old.(metav1.Object).GetResourceVersion() != obj.(metav1.Object).GetResourceVersion())
		},
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return func() (map[string]time.Time, func() map[string]int) {
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
	wait:
		for {
			select {
			case <-finished:
				break wait
			case <-ctx.Done():
				break wait
			case <-tick.C:
				mu.Lock()
				fmt.Printf("bench: %s: %d of %d done\n", resource, len(at), want)
				mu.Unlock()
			}
		}
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]time.Time, len(at))
		for k, v := range at {
			out[k] = v
		}
		return out, func() map[string]int {
			mu.Lock()
			defer mu.Unlock()
			c := make(map[string]int, len(updates))
			for k, v := range updates {
				c[k] = v
			}
			return c
		}
	}, nil
}

func parallel(n int, f func(i int) error) error {
	sem := make(chan struct{}, 64)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- f(i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// stats returns seconds from start to the last, median and 99th percentile completion.
func stats(at map[string]time.Time, start time.Time) (all, p50, p99 float64) {
	var d []float64
	for _, t := range at {
		d = append(d, t.Sub(start).Seconds())
	}
	if len(d) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(d)
	pick := func(q float64) float64 { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return d[len(d)-1], pick(0.50), pick(0.99)
}

func report(r *result, out string) {
	rows := [][3]string{
		{"Nodes registered at once", fmt.Sprint(r.Nodes), ""},
		{"all Nodes initialised", fmt.Sprintf("%.2f s", r.NodesAllInitialisedS), "target < 5 s for 100"},
		{"Node initialised p50 / p99", fmt.Sprintf("%.2f / %.2f s", r.NodeP50S, r.NodeP99S), ""},
		{"cloud calls per Node", fmt.Sprintf("%.1f", r.CloudCallsPerNode), ""},
		{"Services created at once", fmt.Sprint(r.Services), ""},
		{"all Services have an address", fmt.Sprintf("%.2f s", r.ServicesAllAddressedS), "target < 20 s for 1,000"},
		{"Service address p50 / p99", fmt.Sprintf("%.2f / %.2f s", r.ServiceP50S, r.ServiceP99S), ""},
		{"API writes per Service (mean / max)", fmt.Sprintf("%.2f / %d", r.APIWritesPerService, r.MaxAPIWritesOneSvc), "target <= 2 (finalizer + status)"},
		{"cloud (store) writes to create them all", fmt.Sprintf("%.0f", r.CloudWritesCreate), "batched per shard"},
		{"one Node added: LBs updated / store writes", fmt.Sprintf("%d of %d / %.0f", r.NodeAddedLBsUpdated, r.Services, r.NodeAddedCloudWrites), "target: all, at most 1 write per LB"},
		{"time until every LB has the new Node", fmt.Sprintf("%.2f s", r.NodeAddedAllUpdatedS), ""},
		{"cloud writes on restart, nothing changed", fmt.Sprintf("%.0f", r.RestartCloudWrites), "target 0"},
	}
	if m := r.Memory; m != nil {
		rows = append(rows,
			[3]string{"memory: Nodes / Services in the API server", fmt.Sprintf("%d / %d", m.Nodes, m.Services), ""},
			[3]string{"memory: all initialised and addressed", fmt.Sprintf("%.1f s", m.SettledS), ""},
			[3]string{"memory: ccm peak RSS (VmHWM)", fmt.Sprintf("%.1f MiB", m.PeakRSSMiB), "target < 150 MiB"},
			[3]string{"memory: ccm RSS when settled", fmt.Sprintf("%.1f MiB", m.SettledRSSMiB), ""},
		)
	}
	var md strings.Builder
	md.WriteString("| measure | value | target |\n| --- | --- | --- |\n")
	for _, row := range rows {
		fmt.Fprintf(&md, "| %s | %s | %s |\n", row[0], row[1], row[2])
	}
	fmt.Print("\n" + md.String())
	if err := os.MkdirAll(out, 0o755); err == nil {
		os.WriteFile(filepath.Join(out, "dummy.md"), []byte(md.String()), 0o644)
		b, _ := json.MarshalIndent(r, "", "  ")
		os.WriteFile(filepath.Join(out, "dummy.json"), b, 0o644)
		fmt.Printf("\nwritten to %s/dummy.{md,json}\n", out)
	}
}
