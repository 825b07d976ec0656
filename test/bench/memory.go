package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/benchscenario"
	"github.com/ccm-project/ccm/common/testenv"
)

type memoryResult struct {
	Nodes         int      `json:"nodes"`
	Services      int      `json:"services"`
	LBServices    int      `json:"lb_services"`
	CCMArgs       []string `json:"ccm_args,omitempty"`
	GOMEMLIMIT    string   `json:"gomemlimit,omitempty"`
	SettledS      float64  `json:"settled_s"`
	PeakRSSMiB    float64  `json:"peak_rss_mib"`
	SettledRSSMiB float64  `json:"settled_rss_mib"`
	CPUSeconds    float64  `json:"cpu_s"` // user + system time of the ccm until settled
	// The dummy store's cost at the API server until settled: ConfigMap writes it served
	// (create, update, patch; every namespace, but only the store writes ConfigMaps here), and
	// the largest size of etcd's database sampled (every 15 s; the API server compacts old
	// revisions every 5 minutes, so whole-shard writes add up in between).
	ConfigMapWrites float64 `json:"configmap_writes"`
	EtcdDBMaxMiB    float64 `json:"etcd_db_max_mib"`
	// AtPeak splits the highest RSS sampled (every 5 s) into its parts: anonymous memory
	// (heap, stacks) and file pages (the binary), with the Go runtime's view then.
	AtPeak *peakSample `json:"at_peak,omitempty"`
}

// peakSample is one sample of the ccm's memory: /proc/PID/status fields in MiB and the Go
// runtime's memstats from /metrics in MiB.
type peakSample struct {
	AtS        float64 `json:"at_s"`
	RSSMiB     float64 `json:"rss_mib"`
	AnonMiB    float64 `json:"rss_anon_mib"`
	FileMiB    float64 `json:"rss_file_mib"`
	HeapInuse  float64 `json:"heap_inuse_mib"`
	HeapAlloc  float64 `json:"heap_alloc_mib"`
	NextGC     float64 `json:"next_gc_mib"`
	HeapIdle   float64 `json:"heap_idle_mib"`
	HeapFreed  float64 `json:"heap_released_mib"`
	StackInuse float64 `json:"stack_inuse_mib"`
	GoSys      float64 `json:"go_sys_mib"`
}

// samplePeak reads the ccm's memory every 5 s until ctx ends and keeps the sample with the
// highest RSS; at each new high (by 2 MiB or more) it saves the heap profile to profile, if
// set, so that what was live at the worst moment can be read (go tool pprof -top).
func samplePeak(ctx context.Context, ccm *testenv.CCM, token, profile string, start time.Time) func() *peakSample {
	var best *peakSample
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ccm.Done():
				return
			case <-t.C:
			}
			rss, err := procStatusMiB(ccm.Pid(), "VmRSS")
			if err != nil || (best != nil && rss < best.RSSMiB+2) {
				continue
			}
			s := &peakSample{AtS: time.Since(start).Seconds(), RSSMiB: rss}
			s.AnonMiB, _ = procStatusMiB(ccm.Pid(), "RssAnon")
			s.FileMiB, _ = procStatusMiB(ccm.Pid(), "RssFile")
			if m, err := scrape(ccm.Get, token); err == nil {
				mib := func(name string) float64 { return m.value(name) / (1 << 20) }
				s.HeapInuse, s.HeapAlloc = mib("go_memstats_heap_inuse_bytes"), mib("go_memstats_heap_alloc_bytes")
				s.NextGC, s.HeapIdle = mib("go_memstats_next_gc_bytes"), mib("go_memstats_heap_idle_bytes")
				s.HeapFreed, s.StackInuse = mib("go_memstats_heap_released_bytes"), mib("go_memstats_stack_inuse_bytes")
				s.GoSys = mib("go_memstats_sys_bytes")
			}
			if profile != "" {
				if code, body, err := ccm.Get("/debug/pprof/heap", token); err == nil && code == 200 {
					_ = os.WriteFile(profile, []byte(body), 0o644)
				}
			}
			best = s
		}
	}()
	return func() *peakSample { <-done; return best }
}

// sampleEtcdSize reads the API server's apiserver_storage_size_bytes (etcd's database size)
// every 15 s until ctx ends and returns the largest, in MiB.
func sampleEtcdSize(ctx context.Context, env *testenv.Env) func() float64 {
	var most float64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(15 * time.Second)
		defer t.Stop()
		for {
			if body, err := env.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx); err == nil {
				if m, err := parseMetrics(string(body)); err == nil {
					most = max(most, m.sumWith("apiserver_storage_size_bytes")/(1<<20))
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 { <-done; return most }
}

// runMemory fills a fresh control plane with nNodes Nodes (all in the dummy's inventory) and
// nServices Services, nLB of them of type LoadBalancer and the rest ClusterIP, waits until the
// ccm has initialised every Node and addressed every LoadBalancer Service, and reads the ccm's
// peak resident set (VmHWM) and CPU time from /proc. LoadBalancer Services skip NodePorts: the
// NodePort range holds fewer than 10,000 ports, and the ccm's work does not depend on them.
func runMemory(nNodes, nServices, nLB int, extra []string, heapProfile string) (*memoryResult, error) {
	if nLB < 0 || nLB > nServices {
		nLB = nServices
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// The dummy rewrites a whole shard ConfigMap (1/8 of all records, about 400 KB at 10,000)
	// for each new load balancer: about 2 GB at 10,000, within little more than one compaction
	// interval, which fills etcd's default 2 GiB quota. 8 GiB is etcd's suggested maximum.
	env, err := testenv.Start(ctx, testenv.Options{Overlay: "dummy", EtcdQuotaBytes: 8 << 30})
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	var cfg strings.Builder
	cfg.WriteString("[Global]\nregion = bench\n\n[Pool \"bench\"]\ncidr = 10.128.0.0/14\n\n")
	for i := range nNodes {
		fmt.Fprintf(&cfg, "[Instance \"mem-node-%05d\"]\ninternal-ip = 10.%d.%d.%d\n\n", i, 1+i/62500, i/250%250, i%250+1)
	}
	cfgPath := filepath.Join(env.Dir, "memory.conf")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	// Longer lease timings than the tests': a machine this busy can miss a 3 s renewal, and a
	// lost lease ends the process. The node monitor runs at the library's default period (the
	// tests' 1 s would copy every Node five times as often as a real cluster does).
	ccm, err := env.StartCCM(ctx, testenv.CCMOptions{Name: "ccm-memory", Provider: "dummy", CloudConfig: cfgPath,
		Args: append([]string{"--v=1", "--leader-elect-lease-duration=60s", "--leader-elect-renew-deadline=45s", "--leader-elect-retry-period=2s", "--node-monitor-period=5s"}, extra...)})
	if err != nil {
		return nil, err
	}
	go func() { // stop waiting if the ccm dies
		select {
		case <-ccm.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := env.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	nodeDone, err := benchscenario.WatchUntil(ctx, env, "nodes", "", nNodes, benchscenario.Initialised)
	if err != nil {
		return nil, err
	}
	svcDone, err := benchscenario.WatchUntil(ctx, env, "services", "bench", nLB, benchscenario.Addressed)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	peakCtx, stopPeak := context.WithCancel(ctx)
	defer stopPeak()
	peakProfile := ""
	if heapProfile != "" {
		peakProfile = heapProfile + ".peak"
	}
	atPeak := samplePeak(peakCtx, ccm, env.AdminToken, peakProfile, start)
	etcdMax := sampleEtcdSize(peakCtx, env)
	fmt.Printf("bench: memory: registering %d Nodes and creating %d Services (%d LoadBalancer)\n", nNodes, nServices, nLB)
	if err := benchscenario.Parallel(nNodes, func(i int) error {
		return testenv.RegisterNode(ctx, env.Client, fmt.Sprintf("mem-node-%05d", i))
	}); err != nil {
		return nil, err
	}
	noPorts := false
	if err := benchscenario.Parallel(nServices, func(i int) error {
		s := testenv.LoadBalancerService("bench", fmt.Sprintf("mem-svc-%05d", i), 80)
		s.Spec.AllocateLoadBalancerNodePorts = &noPorts
		if i >= nLB {
			s.Spec.Type, s.Spec.AllocateLoadBalancerNodePorts = v1.ServiceTypeClusterIP, nil
		}
		_, err := env.Client.CoreV1().Services("bench").Create(ctx, s, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	nodeDone(ccm.Done())
	svcDone(ccm.Done())
	stopPeak()
	r := &memoryResult{AtPeak: atPeak(), EtcdDBMaxMiB: etcdMax(), Nodes: nNodes, Services: nServices, LBServices: nLB, CCMArgs: extra,
		GOMEMLIMIT: os.Getenv("GOMEMLIMIT"), SettledS: time.Since(start).Seconds()}
	if ccm.Exited() {
		return nil, fmt.Errorf("ccm exited: %s", ccm.Tail(20))
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("memory scenario did not settle: %w", ctx.Err())
	}
	if heapProfile != "" { // go tool pprof -top <file>
		code, body, err := ccm.Get("/debug/pprof/heap", env.AdminToken)
		if err != nil || code != 200 {
			return nil, fmt.Errorf("heap profile: HTTP %d: %v", code, err)
		}
		if err := os.WriteFile(heapProfile, []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	api, err := readAPICounts(ctx, env)
	if err != nil {
		return nil, err
	}
	r.ConfigMapWrites = api.ConfigMapWrites - api.ConfigMapConflicts
	if r.PeakRSSMiB, err = procStatusMiB(ccm.Pid(), "VmHWM"); err != nil {
		return nil, err
	}
	if r.SettledRSSMiB, err = procStatusMiB(ccm.Pid(), "VmRSS"); err != nil {
		return nil, err
	}
	if r.CPUSeconds, err = procCPUSeconds(ccm.Pid()); err != nil {
		return nil, err
	}
	return r, nil
}

// procCPUSeconds reads a process's user + system time from /proc/<pid>/stat (fields 14 and
// 15, in clock ticks of 1/100 s on Linux).
func procCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its ')' are plain.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime %q %q", pid, f[11], f[12])
	}
	return (utime + stime) / 100, nil
}

// procStatusMiB reads a kB field of /proc/<pid>/status in MiB.
func procStatusMiB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}
