// Command bench measures the ccm (dummy provider) on the local control plane: N Nodes
// registered at once (time to initialised, cloud calls per Node), one Node added to 200
// LoadBalancer Services (writes, time until every LB has it), M LoadBalancer Services created
// at once (time to an address, API writes per Service), a restart with nothing changed (cloud
// writes and reads), and the ccm's peak memory with many objects in the API server.
// `make bench-dummy` runs it; the results go to bin/bench/dummy.{md,json,svg} in the schema of
// common/benchreport, and --merge writes bin/bench/summary.md from every provider's JSON.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/benchreport"
	"github.com/ccm-project/ccm/common/benchscenario"
	"github.com/ccm-project/ccm/common/testenv"
)

type result struct {
	Nodes                int
	NodeTimes            []float64 // seconds from registration to initialised, per Node
	CloudCallsPerNode    float64
	NodeAddedLBs         int
	NodeAddedLBsUpdated  int
	NodeAddedCloudWrites float64
	NodeAddedAllUpdatedS float64
	NodeAddedCost        nodeAddedCost
	NodeAddedAPI         apiCounts // at the API server, until every LB had the Node
	Services             int
	ServiceTimes         []float64 // seconds from creation to an address, per Service
	APIWritesPerService  float64
	MaxAPIWritesOneSvc   int
	CloudWritesCreate    float64
	RestartLBs           int
	RestartCloudWrites   float64
	RestartCloudReads    float64
	Memory               *memoryResult
}

func main() {
	nodes := flag.Int("nodes", 100, "N: Nodes registered at once")
	services := flag.Int("services", 1000, "M: LoadBalancer Services created at once")
	nodeAdded := flag.Int("node-added-services", 200, "LoadBalancer Services that exist when one Node is added")
	out := flag.String("out", "bin/bench", "folder for dummy.{md,json,svg}")
	extra := flag.String("ccm-args", "", "more ccm flags, space-separated (e.g. --kube-api-qps=20 to compare with the library defaults)")
	memNodes := flag.Int("memory-nodes", 1000, "Nodes in the API server for the memory scenario (0 skips it; the target is for 5000)")
	memServices := flag.Int("memory-services", 2000, "Services in the API server for the memory scenario (the target is for 10000)")
	memLB := flag.Int("memory-lb-services", -1, "how many of the memory scenario's Services are of type LoadBalancer, the rest ClusterIP (-1: all)")
	heap := flag.String("memory-heap-profile", "", "write the ccm's heap profile at the end of the memory scenario to this file")
	naProfile := flag.String("node-added-cpu-profile", "", "write the ccm's CPU profile of the node-added scenario's first 8 s to this file (the HTTP client gives up after 10 s)")
	apiProfile := flag.String("node-added-apiserver-profile", "", "write kube-apiserver's CPU profile of the node-added scenario's first 8 s to this file")
	memOnly := flag.Bool("memory-only", false, "run only the memory scenario (and print its figures as JSON)")
	merge := flag.String("merge", "", "only merge every provider's report in this folder (*.json) into summary.md there")
	flag.Parse()
	if *merge != "" {
		if err := writeSummary(*merge); err != nil {
			fmt.Fprintln(os.Stderr, "bench: merge:", err)
			os.Exit(1)
		}
		return
	}
	if *memOnly {
		m, err := runMemory(*memNodes, *memServices, *memLB, strings.Fields(*extra), *heap)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: memory:", err)
			os.Exit(1)
		}
		b, _ := json.MarshalIndent(m, "", "  ")
		fmt.Println(string(b))
		verdict := "no target at this size"
		if met := memoryMet(m); met != nil {
			verdict = map[bool]string{true: "met", false: "NOT MET"}[*met]
		}
		fmt.Printf("bench: memory: ccm peak RSS (VmHWM) %.1f MiB; target < 150 MiB at 5,000 Nodes and 10,000 Services: %s\n", m.PeakRSSMiB, verdict)
		return
	}
	command := "make bench-dummy BENCH_ARGS=\"" + strings.Join(os.Args[1:], " ") + "\""
	r, err := run(*nodes, *services, *nodeAdded, strings.Fields(*extra), *naProfile, *apiProfile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if err := report(r, command, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if *memNodes > 0 {
		if r.Memory, err = runMemory(*memNodes, *memServices, *memLB, strings.Fields(*extra), *heap); err != nil {
			fmt.Fprintln(os.Stderr, "bench: memory:", err)
			os.Exit(1)
		}
		if err := report(r, command, *out); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// writeSummary merges the reports in dir. A file that is not a valid report (a stale one in an
// older format, say) is named and skipped rather than failing the whole bench at its end.
func writeSummary(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	var rs []*benchreport.Report
	for _, p := range paths {
		r, err := benchreport.Read(p)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: merge: skipping %v\n", err)
			continue
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return fmt.Errorf("no valid reports (*.json) in %s", dir)
	}
	p := filepath.Join(dir, "summary.md")
	if err := os.WriteFile(p, []byte(benchreport.Summary(rs)), 0o644); err != nil {
		return err
	}
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Provider
	}
	fmt.Printf("bench: %s merges %s\n", p, strings.Join(names, ", "))
	return nil
}

func run(nNodes, nServices, nNodeAdded int, extra []string, naProfile, apiProfile string) (*result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{Overlay: "dummy"})
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	metricsToken, err := env.MetricsReaderToken(ctx)
	if err != nil {
		return nil, err
	}

	// Inventory for every Node, and a pool big enough for every Service.
	var cfg strings.Builder
	cfg.WriteString("[Global]\nregion = bench\n\n[Pool \"bench\"]\ncidr = 10.128.0.0/16\n\n")
	for i := range nNodes + 1 { // one more for the node-added scenario
		fmt.Fprintf(&cfg, "[Instance \"bench-node-%04d\"]\ninternal-ip = 10.%d.%d.%d\nzone = zone-%d\n\n", i, i/62500, i/250%250, i%250+1, i%3)
	}
	cfgPath := filepath.Join(env.Dir, "bench.conf")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	startCCM := func(name string) (*testenv.CCM, error) {
		return benchscenario.StartLeader(ctx, env, testenv.CCMOptions{Name: name, Provider: "dummy", CloudConfig: cfgPath, Args: append([]string{"--v=1"}, extra...)})
	}
	ccm, err := startCCM("ccm-bench-1")
	if err != nil {
		return nil, err
	}
	r := &result{Nodes: nNodes, Services: nServices, NodeAddedLBs: nNodeAdded}
	// Store writes are counted at the API server (a watch of the shard ConfigMaps), not by the
	// ccm; its own metrics give all its cloud calls. A failed scrape fails the bench (see scrape).
	shards, err := watchStore(ctx, env)
	if err != nil {
		return nil, err
	}
	defer shards.Stop()
	// writesNow reads the shard writes so far (all ccm processes) and the cloud calls of c,
	// store writes excluded.
	writesNow := func(c *testenv.CCM) (writes, calls float64, err error) {
		m, err := scrape(c.Get, metricsToken)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", c.Name, err)
		}
		settle()
		n, err := shards.Writes()
		calls = m.sum(`ccm_cloud_api_requests_total{`)
		for _, op := range []string{"Create", "Update", "Delete"} {
			calls -= m.sumWith("ccm_cloud_api_requests_total", `operation="`+op+`"`, `service="loadbalancer-store"`)
		}
		return float64(n), calls, err
	}
	createServices := func(ns, prefix string, n int) error {
		if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		return benchscenario.Parallel(n, func(i int) error {
			_, err := env.Client.CoreV1().Services(ns).Create(ctx, testenv.LoadBalancerService(ns, fmt.Sprintf("%s-%05d", prefix, i), 80), metav1.CreateOptions{})
			return err
		})
	}

	// N Nodes at once.
	fmt.Printf("bench: registering %d Nodes at once\n", nNodes)
	nodeDone, err := benchscenario.WatchUntil(ctx, env, "nodes", "", nNodes, benchscenario.Initialised)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := benchscenario.Parallel(nNodes, func(i int) error {
		return testenv.RegisterNode(ctx, env.Client, fmt.Sprintf("bench-node-%04d", i))
	}); err != nil {
		return nil, err
	}
	r.NodeTimes = benchscenario.Since(nodeDone(ccm.Done()), start)
	_, calls, err := writesNow(ccm)
	if err != nil {
		return nil, fmt.Errorf("cloud calls of %d Nodes: %w", nNodes, err)
	}
	r.CloudCallsPerNode = calls / float64(nNodes)

	// One Node added to nNodeAdded LB Services: every LB's member set changes, so one cloud
	// write per LB is the floor. It runs before the M Services exist, so that it has exactly
	// nNodeAdded LBs.
	if nNodeAdded > 0 {
		fmt.Printf("bench: adding one Node to %d LoadBalancer Services\n", nNodeAdded)
		naDone, err := benchscenario.WatchUntil(ctx, env, "services", "bench-na", nNodeAdded, benchscenario.Addressed)
		if err != nil {
			return nil, err
		}
		if err := createServices("bench-na", "na", nNodeAdded); err != nil {
			return nil, err
		}
		naDone(ccm.Done())
		scrapeNow := func() (*metrics, error) { return scrape(ccm.Get, metricsToken) }
		if naProfile != "" { // go tool pprof -top FILE
			go func() {
				if code, body, err := ccm.Get("/debug/pprof/profile?seconds=8", env.AdminToken); err == nil && code == 200 {
					_ = os.WriteFile(naProfile, []byte(body), 0o644)
				}
			}()
		}
		if apiProfile != "" {
			go func() {
				if body, err := env.Client.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "8").DoRaw(ctx); err == nil {
					_ = os.WriteFile(apiProfile, body, 0o644)
				}
			}()
		}
		if err := nodeAddedScenario(ctx, env, r, scrapeNow, ccm.Pid(), shards); err != nil {
			return nil, err
		}
	}

	// M Services at once.
	fmt.Printf("bench: creating %d LoadBalancer Services at once\n", nServices)
	svcWatch, err := benchscenario.Watch(ctx, env, "services", "bench", nServices, benchscenario.Addressed)
	if err != nil {
		return nil, err
	}
	defer svcWatch.Stop()
	before, _, err := writesNow(ccm)
	if err != nil {
		return nil, fmt.Errorf("store writes before %d Services: %w", nServices, err)
	}
	start = time.Now()
	if err := createServices("bench", "svc", nServices); err != nil {
		return nil, err
	}
	r.ServiceTimes = benchscenario.Since(svcWatch.Wait(ccm.Done()), start)
	time.Sleep(2 * time.Second) // late writes (there should be none) would show in the count
	total := 0
	for _, w := range svcWatch.Updates() {
		total += w
		r.MaxAPIWritesOneSvc = max(r.MaxAPIWritesOneSvc, w)
	}
	r.APIWritesPerService = float64(total) / float64(nServices)
	after, _, err := writesNow(ccm)
	if err != nil {
		return nil, fmt.Errorf("store writes after %d Services: %w", nServices, err)
	}
	r.CloudWritesCreate = after - before

	// Restart with nothing changed.
	fmt.Println("bench: restarting the ccm with nothing changed")
	r.RestartLBs = nServices + nNodeAdded
	ccm.Stop(10 * time.Second)
	settle()
	beforeRestart, err := shards.Writes()
	if err != nil {
		return nil, err
	}
	ccm2, err := startCCM("ccm-bench-2")
	if err != nil {
		return nil, err
	}
	if err := benchscenario.WaitEnsured(ctx, ccm2, metricsToken, r.RestartLBs); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second) // a late write would show
	w, reads, err := writesNow(ccm2)
	if err != nil {
		return nil, fmt.Errorf("cloud calls after the restart: %w", err)
	}
	r.RestartCloudWrites, r.RestartCloudReads = w-float64(beforeRestart), reads
	return r, nil
}

// nodeAddedScenario registers one more Node and waits until every LB record has changed.
// The dummy keeps one record per LB (with a fingerprint of its desired state, nodes included)
// in ConfigMaps: an LB is updated when its fingerprint changes, as the store watch sees it.
func nodeAddedScenario(ctx context.Context, env *testenv.Env, r *result, scrapeNow func() (*metrics, error), ccmPid int, shards *storeWatch) error {
	settle()
	old, err := shards.Fingerprints()
	if err != nil {
		return err
	}
	if len(old) != r.NodeAddedLBs {
		return fmt.Errorf("node added: %d LB records before, want %d", len(old), r.NodeAddedLBs)
	}
	before, err := scrapeNow()
	if err != nil {
		return fmt.Errorf("node added: store writes before: %w", err)
	}
	cpuBefore, err := procCPUSeconds(ccmPid)
	if err != nil {
		return err
	}
	writesBefore, err := shards.Writes()
	if err != nil {
		return err
	}
	apiBefore, err := readAPICounts(ctx, env)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := testenv.RegisterNode(ctx, env.Client, fmt.Sprintf("bench-node-%04d", r.Nodes)); err != nil {
		return err
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		now, err := shards.Fingerprints()
		if err != nil {
			return err
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
		time.Sleep(20 * time.Millisecond) // the watch's copy: no API call
	}
	r.NodeAddedAllUpdatedS = time.Since(start).Seconds()
	apiAfter, err := readAPICounts(ctx, env)
	if err != nil {
		return err
	}
	r.NodeAddedAPI = apiAfter.minus(apiBefore)
	mid, err := scrapeNow()
	if err != nil {
		return fmt.Errorf("node added: store writes when done: %w", err)
	}
	r.NodeAddedCost = costBetween(before, mid)
	cpuAfter, err := procCPUSeconds(ccmPid)
	if err != nil {
		return err
	}
	r.NodeAddedCost.CCMCPUSeconds = cpuAfter - cpuBefore
	time.Sleep(3 * time.Second) // more writes than LBs would show here
	writesAfter, err := shards.Writes()
	if err != nil {
		return err
	}
	r.NodeAddedCloudWrites = float64(writesAfter - writesBefore)
	return nil
}

// nodeAddedCost says where the node-added time went, from the ccm's own histograms between two
// scrapes: how many UpdateLoadBalancer calls ran and how long each took on average, and the
// mean latency of the store's reads and writes (one shard ConfigMap each).
type nodeAddedCost struct {
	Updates, UpdateMeanS          float64
	StoreGets, StoreGetMeanS      float64
	StoreUpdates, StoreUpdateMean float64
	CCMCPUSeconds                 float64 // the ccm's user + system time meanwhile
}

func costBetween(a, b *metrics) nodeAddedCost {
	diff := func(prefix string) float64 { return b.sum(prefix) - a.sum(prefix) }
	mean := func(sum, n float64) float64 {
		if n == 0 {
			return 0
		}
		return sum / n
	}
	const rec, call = `ccm_reconcile_duration_seconds_`, `ccm_cloud_api_request_duration_seconds_`
	var c nodeAddedCost
	c.Updates = diff(rec + `count{kind="loadbalancer",operation="update",provider="dummy"`)
	c.UpdateMeanS = mean(diff(rec+`sum{kind="loadbalancer",operation="update",provider="dummy"`), c.Updates)
	c.StoreGets = diff(call + `count{operation="Get",provider="dummy",service="loadbalancer-store"`)
	c.StoreGetMeanS = mean(diff(call+`sum{operation="Get",provider="dummy",service="loadbalancer-store"`), c.StoreGets)
	c.StoreUpdates = diff(call + `count{operation="Update",provider="dummy",service="loadbalancer-store"`)
	c.StoreUpdateMean = mean(diff(call+`sum{operation="Update",provider="dummy",service="loadbalancer-store"`), c.StoreUpdates)
	return c
}

// report prints the table and writes it, with the latency samples, under out.
func report(r *result, command, out string) error {
	rep := benchreport.New("dummy")
	rep.Command = command
	p := benchreport.Percentile
	nodes := fmt.Sprintf("%d Nodes at once", r.Nodes)
	svcs := fmt.Sprintf("%d LB Services at once", r.Services)
	rep.Add(benchreport.Row{Key: benchreport.KeyNodeInitNodes, Scenario: nodes, Measure: "Nodes initialised", Value: float64(len(r.NodeTimes)),
		Text: fmt.Sprintf("%d of %d", len(r.NodeTimes), r.Nodes), Target: "all", Met: benchreport.Met(len(r.NodeTimes) == r.Nodes)}).
		Add(benchreport.Row{Key: benchreport.KeyNodeInitP50, Scenario: nodes, Measure: "time to initialised p50", Value: p(r.NodeTimes, 0.5), Unit: "s"}).
		Add(benchreport.Row{Key: benchreport.KeyNodeInitP99, Scenario: nodes, Measure: "time to initialised p99", Value: p(r.NodeTimes, 0.99), Unit: "s"}).
		Add(benchreport.Row{Key: benchreport.KeyNodeInitAll, Scenario: nodes, Measure: "all initialised", Value: benchscenario.MaxOf(r.NodeTimes), Unit: "s"}).
		Add(benchreport.Row{Key: benchreport.KeyNodeInitCallsPerNode, Scenario: nodes, Measure: "cloud calls per Node", Value: r.CloudCallsPerNode})
	if r.NodeAddedLBs > 0 {
		na := fmt.Sprintf("one Node added, %d LB Services", r.NodeAddedLBs)
		rep.Add(benchreport.Row{Key: benchreport.KeyNodeAddedLBs, Scenario: na, Measure: "LBs updated", Value: float64(r.NodeAddedLBsUpdated),
			Text: fmt.Sprintf("%d of %d", r.NodeAddedLBsUpdated, r.NodeAddedLBs), Target: "all", Met: benchreport.Met(r.NodeAddedLBsUpdated == r.NodeAddedLBs)}).
			Add(benchreport.Row{Key: benchreport.KeyNodeAddedWrites, Scenario: na, Measure: "cloud (store) writes: shard ConfigMap writes the API server made", Value: r.NodeAddedCloudWrites,
				Target: "<= 1 per LB", Met: benchreport.Met(r.NodeAddedCloudWrites <= float64(r.NodeAddedLBs))}).
			Add(benchreport.Row{Key: benchreport.KeyNodeAddedAll, Scenario: na, Measure: "until every LB has the Node", Value: r.NodeAddedAllUpdatedS, Unit: "s",
				Target: "< 5 s at 1,000 LBs", Met: nodeAddedMet(r)})
		c := r.NodeAddedCost
		rep.Add(benchreport.Row{Key: "dummy.node_added.update_calls", Scenario: na, Measure: "UpdateLoadBalancer calls until then (mean duration)", Value: c.Updates,
			Text: fmt.Sprintf("%.0f (%.0f ms)", c.Updates, 1000*c.UpdateMeanS)}).
			Add(benchreport.Row{Key: "dummy.node_added.store_calls", Scenario: na, Measure: "store shard reads / writes until then (mean latency)", Value: c.StoreGets + c.StoreUpdates,
				Text: fmt.Sprintf("%.0f (%.0f ms) / %.0f (%.0f ms)", c.StoreGets, 1000*c.StoreGetMeanS, c.StoreUpdates, 1000*c.StoreUpdateMean)})
		rep.Add(benchreport.Row{Key: "dummy.node_added.ccm_cpu_s", Scenario: na, Measure: "ccm CPU time until then", Value: c.CCMCPUSeconds, Unit: "s"})
		api := r.NodeAddedAPI
		rep.Add(benchreport.Row{Key: "dummy.node_added.api_configmap_requests", Scenario: na, Measure: "ConfigMap reads / writes (of them refused: conflict) the API server served until then", Value: api.ConfigMapGets + api.ConfigMapWrites,
			Text: fmt.Sprintf("%.0f / %.0f (%.0f)", api.ConfigMapGets, api.ConfigMapWrites, api.ConfigMapConflicts)}).
			Add(benchreport.Row{Key: "dummy.node_added.control_plane_cpu_s", Scenario: na, Measure: "kube-apiserver / etcd CPU time until then", Value: api.APIServerCPU + api.EtcdCPU, Unit: "s",
				Text: fmt.Sprintf("%.2f / %.2f s", api.APIServerCPU, api.EtcdCPU)}).
			Add(benchreport.Row{Key: "dummy.node_added.write_latency_ms", Scenario: na, Measure: "ConfigMap write: mean time in kube-apiserver / of it in etcd", Value: meanMS(api.WriteSeconds, api.WriteCount), Unit: "ms",
				Text: fmt.Sprintf("%.1f / %.1f ms", meanMS(api.WriteSeconds, api.WriteCount), meanMS(api.EtcdUpdSeconds, api.EtcdUpdCount))})
	}
	rep.Add(benchreport.Row{Key: benchreport.KeyLBServices, Scenario: svcs, Measure: "Services addressed", Value: float64(len(r.ServiceTimes)),
		Text: fmt.Sprintf("%d of %d", len(r.ServiceTimes), r.Services), Target: "all", Met: benchreport.Met(len(r.ServiceTimes) == r.Services)}).
		Add(benchreport.Row{Key: benchreport.KeyLBP50, Scenario: svcs, Measure: "time to an address p50", Value: p(r.ServiceTimes, 0.5), Unit: "s"}).
		Add(benchreport.Row{Key: benchreport.KeyLBP99, Scenario: svcs, Measure: "time to an address p99", Value: p(r.ServiceTimes, 0.99), Unit: "s"}).
		Add(benchreport.Row{Key: benchreport.KeyLBAll, Scenario: svcs, Measure: "all addressed", Value: benchscenario.MaxOf(r.ServiceTimes), Unit: "s"}).
		Add(benchreport.Row{Key: "dummy.lb.api_writes_per_service", Scenario: svcs, Measure: "API writes per Service (mean / max)", Value: r.APIWritesPerService,
			Text: fmt.Sprintf("%.2f / %d", r.APIWritesPerService, r.MaxAPIWritesOneSvc), Target: "<= 2 (finalizer + status)", Met: benchreport.Met(r.MaxAPIWritesOneSvc <= 2)}).
		Add(benchreport.Row{Key: "dummy.lb.store_writes", Scenario: svcs, Measure: "cloud (store) writes to create them all (shard ConfigMap writes, batched per shard)", Value: r.CloudWritesCreate})
	rs := fmt.Sprintf("restart, nothing changed (%d LBs)", r.RestartLBs)
	rep.Add(benchreport.Row{Key: benchreport.KeyRestartWrites, Scenario: rs, Measure: "cloud writes", Value: r.RestartCloudWrites, Target: "0", Met: benchreport.Met(r.RestartCloudWrites == 0)}).
		Add(benchreport.Row{Key: benchreport.KeyRestartReads, Scenario: rs, Measure: "cloud reads", Value: r.RestartCloudReads})
	if m := r.Memory; m != nil {
		ms := fmt.Sprintf("memory: %d Nodes, %d Services (%d LB)", m.Nodes, m.Services, m.LBServices)
		if m.GOMEMLIMIT != "" {
			ms += ", GOMEMLIMIT=" + m.GOMEMLIMIT
		}
		if len(m.CCMArgs) > 0 {
			ms += ", " + strings.Join(m.CCMArgs, " ")
		}
		rep.Add(benchreport.Row{Key: benchreport.KeyMemoryPeakRSS, Scenario: ms, Measure: "ccm peak RSS (VmHWM)", Value: m.PeakRSSMiB, Unit: "MiB",
			Target: "< 150 MiB at 5,000 / 10,000", Met: memoryMet(m)}).
			Add(benchreport.Row{Key: "memory.settled_rss_mib", Scenario: ms, Measure: "ccm RSS when settled", Value: m.SettledRSSMiB, Unit: "MiB"}).
			Add(benchreport.Row{Key: "memory.cpu_s", Scenario: ms, Measure: "ccm CPU time until settled", Value: m.CPUSeconds, Unit: "s"}).
			Add(benchreport.Row{Key: "memory.settled_s", Scenario: ms, Measure: "all initialised and addressed", Value: m.SettledS, Unit: "s"}).
			Add(benchreport.Row{Key: "memory.configmap_writes", Scenario: ms, Measure: "store ConfigMap writes the API server made until then", Value: m.ConfigMapWrites}).
			Add(benchreport.Row{Key: "memory.etcd_db_max_mib", Scenario: ms, Measure: "etcd database size, largest sampled", Value: m.EtcdDBMaxMiB, Unit: "MiB"})
		if p := m.AtPeak; p != nil {
			rep.Add(benchreport.Row{Key: "memory.peak_rss_anon_mib", Scenario: ms, Measure: "at the highest RSS sampled: anonymous / file pages; Go heap in use / next GC", Value: p.AnonMiB, Unit: "MiB",
				Text: fmt.Sprintf("%.0f / %.0f MiB; %.0f / %.0f MiB (at %.0f s)", p.AnonMiB, p.FileMiB, p.HeapInuse, p.NextGC, p.AtS)})
		}
	}
	rep.Latencies = []benchreport.Distribution{
		{Name: fmt.Sprintf("time to initialised per Node (N=%d)", r.Nodes), Unit: "s", Samples: r.NodeTimes},
		{Name: fmt.Sprintf("time to an address per LB Service (M=%d)", r.Services), Unit: "s", Samples: r.ServiceTimes},
	}
	fmt.Print("\n" + benchreport.Markdown(rep))
	if err := benchreport.Write(out, rep); err != nil {
		return err
	}
	fmt.Printf("\nwritten to %s/dummy.{md,json,svg}\n", out)
	return nil
}

// nodeAddedMet judges the target only at the size it is set for.
func nodeAddedMet(r *result) *bool {
	if r.NodeAddedLBs < 1000 {
		return nil
	}
	return benchreport.Met(r.NodeAddedLBsUpdated == r.NodeAddedLBs && r.NodeAddedAllUpdatedS < 5)
}

// memoryMet judges the target only at the size it is set for.
func memoryMet(m *memoryResult) *bool {
	if m.Nodes < 5000 || m.Services < 10000 {
		return nil
	}
	return benchreport.Met(m.PeakRSSMiB < 150)
}
