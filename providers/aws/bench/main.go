// Command bench runs the issue-9 scenarios for the aws provider against the EC2/ELB fake with
// the real ccm-aws binary on the local control plane: N Nodes registered at once, M
// LoadBalancer Services created at once (NLBs that stay provisioning for D, or classic ELBs), a
// ccm restart with nothing changed, one Node added to the M load balancers, and the throttled
// share when more Services are created under EC2-style throttling. It prints the table and
// writes bin/bench/aws.{json,md,svg} (common/benchreport). `make bench` runs it;
//
//	CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./providers/aws/bench --type=classic --nodes=1000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/benchreport"
	"github.com/ccm-project/ccm/common/benchscenario"
	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/aws/internal/fakeaws"
)

const cluster = "bench"

type options struct {
	nodes, services, nodeAdded, throttled, burst int
	rate                                         float64
	lbType                                       string
	provisioning, timeout                        time.Duration
	out, command                                 string
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 100, "N: Nodes (one EC2 instance each) registered at once")
	flag.IntVar(&o.services, "services", 100, "M: LoadBalancer Services created at once (also the LBs of the restart and node-added scenarios)")
	flag.IntVar(&o.nodeAdded, "node-added-services", benchscenario.NodeAddedLBs, "LoadBalancer Services when one Node is added (those beyond M are created first)")
	flag.StringVar(&o.lbType, "type", "nlb", "load balancer type: nlb (provisioning for D) or classic")
	flag.DurationVar(&o.provisioning, "nlb-provisioning", 10*time.Second, "D: how long a new NLB stays provisioning (with --type=nlb)")
	flag.IntVar(&o.throttled, "throttled-services", 50, "Services created at once under throttling, last (0 skips it)")
	flag.IntVar(&o.burst, "burst", 100, "throttling token bucket size for the throttled scenario")
	flag.Float64Var(&o.rate, "rate", 20, "throttling refill per second for the throttled scenario")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after")
	flag.StringVar(&o.out, "out", "bin/bench", "folder for aws.{md,json,svg}")
	flag.Parse()
	o.command = strings.TrimSpace("CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./providers/aws/bench " + strings.Join(os.Args[1:], " "))
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.nodes < 1 || o.services < 1 {
		return fmt.Errorf("--nodes and --services: want at least 1, got %d and %d", o.nodes, o.services)
	}
	if o.lbType != "nlb" && o.lbType != "classic" {
		return fmt.Errorf("--type: want nlb or classic, got %q", o.lbType)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cl, err := benchscenario.StartCluster(ctx, "aws")
	if err != nil {
		return err
	}
	defer cl.Stop()
	fake := fakeaws.New("us-east-1", cluster)
	fake.SetRulesPerGroupLimit(0)
	fake.AddCredentials("AKIDBENCH", "bench-secret")
	if o.lbType == "nlb" {
		fake.SetNLBProvisioning(o.provisioning)
	}
	url, err := fake.Start()
	if err != nil {
		return err
	}
	defer fake.Close()
	b, err := newBench(o, cl, fake, url)
	if err != nil {
		return err
	}
	if b.ccm, err = b.start(ctx, "ccm-1"); err != nil {
		return err
	}
	b.f = &benchscenario.Figures{Nodes: o.nodes, Services: o.services, RestartLBs: o.services, NodeAddedLBs: max(o.services, o.nodeAdded)}
	if o.lbType == "nlb" {
		b.f.Delay = o.provisioning
	}
	if err := benchscenario.RunAll(ctx, b.registerNodes, b.createServices, b.restart, b.resync, b.nodeAdded, b.throttledServices); err != nil {
		return err
	}
	b.ccm.Stop(10 * time.Second)

	return benchscenario.Report("aws", o.command, b.f, o.out, b.extra...)
}

// bench is the scenarios' state: the fake, the config and Node names, the Services'
// annotations (the load balancer type), the running ccm, and the figures and extra rows.
type bench struct {
	o           options
	cl          *benchscenario.Cluster
	fake        *fakeaws.Server
	conf        string
	names       []string
	annotations map[string]string
	ccm         *testenv.CCM
	f           *benchscenario.Figures
	extra       []benchreport.Row
}

// newBench writes the config and adds the N machines; the last name is kept for the node-added
// scenario.
func newBench(o options, cl *benchscenario.Cluster, fake *fakeaws.Server, url string) (*bench, error) {
	conf, err := writeConfig(cl.Env.Dir, url)
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, cl: cl, fake: fake, conf: conf}
	b.names = make([]string, o.nodes+1) // the last one is the node-added scenario's
	for i := range b.names {
		b.names[i] = fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", 8+i/65536, i/256%256, i%256)
		if i < o.nodes {
			addMachine(fake, b.names[i], i)
		}
	}
	if o.lbType == "nlb" {
		b.annotations = map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}
	}
	return b, nil
}

func (b *bench) start(ctx context.Context, name string) (*testenv.CCM, error) {
	return benchscenario.StartLeader(ctx, b.cl.Env, testenv.CCMOptions{Name: name, Binary: b.cl.Binary, Provider: "aws", CloudConfig: b.conf})
}

func (b *bench) quiet(ctx context.Context, d time.Duration) {
	benchscenario.QuietFor(ctx, d, func() int { return total(b.fake.Calls()) })
}

func (b *bench) createServicesNamed(ctx context.Context, prefix string, n int) ([]float64, error) {
	return benchscenario.CreateServices(ctx, b.cl, b.ccm, prefix, n, b.annotations)
}

// registerNodes: N Nodes at once.
func (b *bench) registerNodes(ctx context.Context) error {
	fmt.Printf("bench: registering %d Nodes at once\n", b.o.nodes)
	c0 := b.fake.Calls()
	var err error
	if b.f.NodeTimes, err = benchscenario.RegisterNodes(ctx, b.cl, b.ccm, b.names[:b.o.nodes]); err != nil {
		return err
	}
	b.quiet(ctx, 2*time.Second)
	b.f.NodeCalls = float64(total(benchscenario.Diff(c0, b.fake.Calls())))
	fmt.Printf("bench: initialisation calls by operation: %s\n", benchscenario.Format(benchscenario.Diff(c0, b.fake.Calls())))
	return nil
}

// createServices: M Services at once.
func (b *bench) createServices(ctx context.Context) error {
	o := b.o
	fmt.Printf("bench: creating %d LoadBalancer Services (%s) at once\n", o.services, o.lbType)
	c0 := b.fake.Calls()
	var err error
	if b.f.ServiceTimes, err = b.createServicesNamed(ctx, "svc", o.services); err != nil {
		return err
	}
	b.quiet(ctx, 3*time.Second)
	lb := benchscenario.Diff(c0, b.fake.Calls())
	b.f.LBCalls = float64(total(lb))
	b.extra = append(b.extra, benchreport.Row{Key: "provider.lb.writes_per_service", Scenario: fmt.Sprintf("%d LB Services at once (%s)", o.services, o.lbType),
		Measure: "cloud writes per Service", Value: float64(writes(lb)) / float64(o.services)})
	fmt.Printf("bench: LB calls by operation: %s\n", benchscenario.Format(lb))
	return nil
}

// restart with nothing changed: a new process re-ensures every Service.
func (b *bench) restart(ctx context.Context) error {
	o, f := b.o, b.f
	c0 := b.fake.Calls()
	var err error
	if b.ccm, err = benchscenario.Restart(ctx, b.cl, b.ccm, func(name string) (*testenv.CCM, error) { return b.start(ctx, name) }, o.services); err != nil {
		return err
	}
	b.quiet(ctx, 3*time.Second)
	rs := benchscenario.Diff(c0, b.fake.Calls())
	f.RestartWrites, f.RestartReads = float64(writes(rs)), float64(total(rs)-writes(rs))
	fmt.Printf("bench: restart calls by operation: %s\n", benchscenario.Format(rs))
	restartSc := fmt.Sprintf("restart, nothing changed, %d LBs (%s)", o.services, o.lbType)
	b.extra = append(b.extra, benchreport.Row{Key: "provider.restart.reads_per_lb", Scenario: restartSc, Measure: "cloud reads per LB (each compared with the cloud)",
		Value: f.RestartReads / float64(o.services)})
	fmt.Printf("bench: restart, nothing changed: %d writes, %.1f reads per LB\n", writes(rs), f.RestartReads/float64(o.services))
	return nil
}

// resync in the running ccm: every Service touched (an annotation no provider reads), so
// the service controller ensures each again; each is compared with the cloud, none written.
func (b *bench) resync(ctx context.Context) error {
	o := b.o
	fmt.Printf("bench: resync of %d unchanged load balancers in the running ccm\n", o.services)
	c0 := b.fake.Calls()
	for i := range o.services {
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"bench.ccm.k8s.io/resync":"%d"}}}`, time.Now().UnixNano()))
		if _, err := b.cl.Env.Client.CoreV1().Services("default").Patch(ctx, fmt.Sprintf("svc-%04d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("resync: touching svc-%04d: %w", i, err)
		}
	}
	b.quiet(ctx, 3*time.Second)
	rsy := benchscenario.Diff(c0, b.fake.Calls())
	resyncSc := fmt.Sprintf("resync, nothing changed, %d LBs (%s)", o.services, o.lbType)
	resyncReads := float64(total(rsy)-writes(rsy)) / float64(o.services)
	b.extra = append(b.extra,
		benchreport.Row{Key: "provider.resync.writes", Scenario: resyncSc, Measure: "cloud writes", Value: float64(writes(rsy)), Target: "0", Met: benchreport.Met(writes(rsy) == 0)},
		benchreport.Row{Key: "provider.resync.reads_per_lb", Scenario: resyncSc, Measure: "cloud reads per LB (each compared with the cloud)", Value: resyncReads})
	fmt.Printf("bench: resync calls by operation: %s\n", benchscenario.Format(rsy))
	fmt.Printf("bench: resync, nothing changed: %d writes, %.1f reads per LB\n", writes(rsy), resyncReads)
	return nil
}

// nodeAdded: one Node added, every load balancer gets the new instance. A timeout is printed,
// not returned: the figures show how far it got.
func (b *bench) nodeAdded(ctx context.Context) error {
	o, f, fake := b.o, b.f, b.fake
	if err := benchscenario.TopUpServices(ctx, b.cl, b.ccm, o.services, f.NodeAddedLBs, b.annotations); err != nil {
		return err
	}
	b.quiet(ctx, 3*time.Second)
	fmt.Printf("bench: adding one Node to %d load balancers\n", f.NodeAddedLBs)
	id := addMachine(fake, b.names[o.nodes], o.nodes)
	c0, t0 := fake.Calls(), time.Now()
	if err := testenv.RegisterNode(ctx, b.cl.Env.Client, b.names[o.nodes]); err != nil {
		return err
	}
	err := benchscenario.Poll(ctx, 3*time.Minute, "every load balancer with the new instance", func() (bool, error) {
		f.NodeAddedUpdated = withInstance(fake, id)
		return f.NodeAddedUpdated >= f.NodeAddedLBs, nil
	})
	f.NodeAddedS = time.Since(t0).Seconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	b.quiet(ctx, 3*time.Second)
	na := benchscenario.Diff(c0, fake.Calls())
	f.NodeAddedWrites = float64(writes(na))
	fmt.Printf("bench: node-added calls by operation: %s\n", benchscenario.Format(na))
	return nil
}

// throttledServices: more Services under throttling: nothing fails, and the share of throttled
// answers (skipped when --throttled-services is 0).
func (b *bench) throttledServices(ctx context.Context) error {
	o, fake := b.o, b.fake
	if o.throttled <= 0 {
		return nil
	}
	fmt.Printf("bench: creating %d more Services under throttling (%d, %g/s)\n", o.throttled, o.burst, o.rate)
	fake.Throttle(o.burst, o.rate)
	c0, th0, t0 := fake.Calls(), fake.Throttled(), time.Now()
	times, err := b.createServicesNamed(ctx, "thr", o.throttled)
	if err != nil {
		return fmt.Errorf("throttled: %w", err)
	}
	b.quiet(ctx, 3*time.Second)
	calls, thr := total(benchscenario.Diff(c0, fake.Calls())), total(benchscenario.Diff(th0, fake.Throttled()))
	// A re-check counts only when its message is the provider's own (testenv.IsRecheck).
	warnings, err := b.cl.Env.LBSyncWarnings(ctx, "aws", "default", "thr-")
	if err != nil {
		return err
	}
	failed, rechecks := warnings.Failed, warnings.Rechecks
	if failed > 0 {
		fmt.Printf("bench: failed syncs under throttling, e.g. %s\n", strings.Join(warnings.Examples, "; "))
	}
	sc := fmt.Sprintf("%d more LB Services, throttled (bucket %d, %g/s)", o.throttled, o.burst, o.rate)
	share := 0.0
	if calls > 0 {
		share = 100 * float64(thr) / float64(calls)
	}
	b.extra = append(b.extra,
		benchreport.Row{Key: "provider.throttled.share_pct", Scenario: sc, Measure: "throttled answers", Value: share, Unit: "%", Text: fmt.Sprintf("%d of %d (%.1f%%)", thr, calls, share)},
		benchreport.Row{Key: "provider.throttled.failed_syncs", Scenario: sc, Measure: "failed load balancer syncs", Value: float64(failed), Target: "0", Met: benchreport.Met(failed == 0)},
		benchreport.Row{Key: "provider.throttled.rechecks", Scenario: sc, Measure: "planned re-checks (NLB provisioning, in use)", Value: float64(rechecks)},
		benchreport.Row{Key: "provider.throttled.all_s", Scenario: sc, Measure: "all addressed", Value: benchscenario.MaxOf(times), Unit: "s"},
		benchreport.Row{Key: "provider.throttled.wall_s", Scenario: sc, Measure: "until the cloud is quiet", Value: time.Since(t0).Seconds(), Unit: "s"})
	fake.Throttle(0, 0)
	return nil
}

// withInstance counts the load balancers that have the instance as a member (an NLB: in every
// target group of its listeners).
func withInstance(f *fakeaws.Server, id string) int {
	n := 0
	for _, name := range f.ClassicLBNames() {
		if lb, ok := f.ClassicLB(name); ok && slices.Contains(lb.Instances, id) {
			n++
		}
	}
	for _, line := range f.Inventory() {
		name, ok := strings.CutPrefix(line, "nlb ")
		if !ok {
			continue
		}
		_, _, tgs, ok := f.NLBByName(name)
		has := ok && len(tgs) > 0
		for _, tg := range tgs {
			has = has && slices.Contains(tg.Targets, id)
		}
		if has {
			n++
		}
	}
	return n
}

func addMachine(f *fakeaws.Server, name string, i int) string {
	return f.AddInstance(fakeaws.Instance{Type: "m5.large", Zone: "us-east-1" + string(rune('a'+i%3)), PrivateDNS: name,
		ENIs: []fakeaws.ENI{{Device: 0, PrivateIPs: []string{fmt.Sprintf("10.%d.%d.%d", 8+i/65536, i/256%256, i%256)}}}})
}

func writeConfig(dir, url string) (string, error) {
	creds := filepath.Join(dir, "aws-credentials")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = AKIDBENCH\naws_secret_access_key = bench-secret\n"), 0o600); err != nil {
		return "", err
	}
	conf := filepath.Join(dir, "aws.conf")
	// Every bench Service is in one namespace, with more NLBs than a namespace's default share
	// of a node group's rules, in an account whose rule quota is raised (SetRulesPerGroupLimit 0).
	return conf, os.WriteFile(conf, []byte(fmt.Sprintf("[Global]\nRegion = us-east-1\nKubernetesClusterID = %s\nCredentialsFile = %s\nNodeSecurityGroupRulesPerNamespace = -1\n\n"+
		"[ServiceOverride \"ec2\"]\nService = ec2\nURL = %s\n\n[ServiceOverride \"elb\"]\nService = elasticloadbalancing\nURL = %s\n", cluster, creds, url, url)), 0o600)
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// writes counts the calls that are not Describe* reads ("ec2:DescribeInstances").
func writes(m map[string]int) int {
	n := 0
	for op, v := range m {
		if _, name, _ := strings.Cut(op, ":"); !strings.HasPrefix(name, "Describe") {
			n += v
		}
	}
	return n
}
