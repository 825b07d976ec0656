// Command faults runs fault scenarios against the real ccm binary, a real kube-apiserver and
// etcd, and each provider's simulated cloud, and prints pass/fail with figures:
//
//   - outage:      every cloud call fails for a while, with NotReady Nodes (two of whose machines
//     are gone): 0 Nodes and 0 load balancers deleted during it; afterwards the gone machines'
//     Nodes are removed and the rest stay.
//   - churn:       Services created, updated and deleted while the ccm is SIGKILLed at random
//     points and restarted: afterwards the cloud holds exactly the existing Services' load
//     balancers (0 leaked) and no Service is stuck with a finalizer.
//   - orphans:     load balancers orphaned by hand (finalizer removed, Service deleted, made
//     again or turned ClusterIP while the ccm is SIGKILLed) are listed by ccm gc --dry-run and
//     reported with grace 0, deleting nothing; with a short grace they are deleted, the other
//     Services' are not, and the Service made again gets its own (checked at the simulator).
//   - throttle:    a token bucket in front of the cloud API and a burst of Services: no failed
//     reconcile (no SyncLoadBalancerFailed event), throttled share reported.
//   - failover:    two replicas: the leader SIGKILLed, the standby reconciles within the lease
//     time; the new leader stopped gracefully, the other takes over within ~2s.
//   - credentials: every ccm log of the run (at -v=10) is searched for the cloud's configured
//     secrets and handed-out tokens and the ccm's own ServiceAccount token, raw and base64.
//
// Usage (make faults does this; make test runs --short):
//
//	CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./test/faults [--short] [--providers=dummy,aws] [--scenarios=churn] [--seed=N]
//
// The churn's operations and SIGKILL points are drawn from one seed, printed at the start and
// in the report with the command that replays it (--seed).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-project/ccm/common/testenv"
)

type sizes struct {
	nodes, services, kills int
	outage                 time.Duration
	churnServices          int
	throttleServices       int
	burst                  int
	rate                   float64
	orphanServices         int
	orphanKills            int
}

var (
	short     = sizes{nodes: 5, services: 4, kills: 3, outage: 15 * time.Second, churnServices: 30, throttleServices: 20, burst: 20, rate: 10, orphanServices: 6, orphanKills: 2}
	full      = sizes{nodes: 20, services: 20, kills: 10, outage: 60 * time.Second, churnServices: 200, throttleServices: 100, burst: 100, rate: 20, orphanServices: 20, orphanKills: 4}
	verbosity = flag.Int("v", 10, "the ccm's log verbosity (the credentials scenario wants 10: request and response bodies)")
)

func main() {
	providers := flag.String("providers", "dummy,aws,openstack,vsphere", "providers to run (each needs bin/ccm-NAME)")
	scenarios := flag.String("scenarios", "failover,throttle,churn,orphans,outage,credentials", "scenarios, in order")
	isShort := flag.Bool("short", false, "the short form run by make test (small sizes)")
	out := flag.String("out", "", "folder for the report (default bin/faults)")
	seed := flag.Int64("seed", 0, "the churn's seed: the same seed (with the same --short) replays the same operations and SIGKILL points; 0 picks one from the clock")
	flag.Parse()
	if *seed == 0 {
		*seed = time.Now().UnixNano()
	}
	fmt.Printf("faults: churn seed %d (replay with --seed=%d)\n", *seed, *seed)
	sz := full
	if *isShort {
		sz = short
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		fatal(err)
	}
	if *out == "" {
		*out = filepath.Join(root, "bin", "faults")
	}
	binDir := os.Getenv("CCM_BIN_DIR")
	if binDir == "" {
		fatal(fmt.Errorf("CCM_BIN_DIR is not set: run `make faults`, or CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./test/faults"))
	}
	var results []result
	failed := false
	for _, p := range strings.Split(*providers, ",") {
		start := time.Now()
		fmt.Printf("==> faults: %s\n", p)
		opts := runOptions{scenarios: strings.Split(*scenarios, ","), sz: sz, seed: *seed, replay: replayCommand(*isShort, p, *scenarios, *seed)}
		rs, err := runProvider(root, binDir, p, opts)
		if err != nil {
			rs = append(rs, result{Provider: p, Scenario: "setup", Pass: false, Detail: err.Error()})
		}
		for _, r := range rs {
			failed = failed || !r.Pass
		}
		results = append(results, rs...)
		fmt.Printf("==> faults: %s done in %v\n", p, time.Since(start).Round(time.Second))
	}
	report(results, *out)
	for _, r := range results {
		if !r.Pass && r.Figures["replay"] != "" {
			fmt.Printf("replay %s/%s: %s\n", r.Provider, r.Scenario, r.Figures["replay"])
		}
	}
	if failed {
		fmt.Println("FAIL: at least one fault scenario failed (see above)")
		os.Exit(1)
	}
	fmt.Println("PASS: every fault scenario passed")
}

// runOptions are one provider's run: its scenarios in order, sizes, the churn's seed and the
// command that replays the run.
type runOptions struct {
	scenarios []string
	sz        sizes
	seed      int64
	replay    string
}

// replayCommand is the make command that runs the same provider's scenarios with the same
// sizes and seed (the scenarios before churn leave the same Services in other namespaces).
func replayCommand(isShort bool, provider, scenarios string, seed int64) string {
	target := "faults"
	if isShort {
		target = "faults-short"
	}
	return fmt.Sprintf(`make %s PROVIDERS=%s FAULTS_ARGS="--scenarios=%s --seed=%d"`, target, provider, scenarios, seed)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "faults:", err)
	os.Exit(1)
}

// runProvider starts a control plane and the provider's cloud, and runs the scenarios on them
// in order (outage goes last among those that need the machines: it removes two).
func runProvider(root, binDir, provider string, opts runOptions) ([]result, error) {
	sz := opts.sz
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{Overlay: provider})
	if err != nil {
		return nil, fmt.Errorf("starting the control plane: %w", err)
	}
	defer env.Stop()
	nodes := make([]string, sz.nodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("%s-node-%d", provider, i+1)
	}
	c, err := startCloud(ctx, env, root, provider, nodes)
	if err != nil {
		return nil, err
	}
	h := &harness{ctx: ctx, env: env, cloud: c, provider: provider, binary: filepath.Join(binDir, "ccm-"+provider), nodes: nodes, sz: sz,
		seed: opts.seed, replay: opts.replay}
	if err := h.registerNodes(); err != nil {
		return nil, err
	}
	var results []result
	for _, s := range opts.scenarios {
		run, ok := scenarioFuncs[s]
		if !ok {
			return results, fmt.Errorf("unknown scenario %q (have failover, throttle, churn, orphans, outage, credentials)", s)
		}
		start := time.Now()
		r := run(h)
		r.Provider, r.Scenario, r.Took = provider, s, time.Since(start).Round(100*time.Millisecond).String()
		verdict := "PASS"
		if !r.Pass {
			verdict = "FAIL"
		}
		fmt.Printf("--- %s %s/%s (%s): %s\n", verdict, provider, s, r.Took, r.Detail)
		results = append(results, r)
		h.stopAll()
	}
	return results, nil
}

var scenarioFuncs = map[string]func(*harness) result{
	"outage":      outage,
	"churn":       churn,
	"orphans":     orphans,
	"throttle":    throttle,
	"failover":    failover,
	"credentials": credentials,
}
