// Command bench runs the issue-9 scenarios for the OpenStack provider against the fake
// OpenStack (Keystone, Nova, Neutron, Octavia with a provisioning delay D) on the local control
// plane: N Nodes registered at once, M LoadBalancer Services created at once, a ccm restart
// with nothing changed, and one Node added to the M load balancers. It prints the table and
// writes bin/bench/openstack.{json,md,svg} (common/benchreport). `make bench` runs it;
//
//	CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./providers/openstack/bench --nodes=1000 --services=1000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ccm-project/ccm/common/benchreport"
	"github.com/ccm-project/ccm/common/benchscenario"
	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/openstack/internal/fake"
)

type options struct {
	nodes, services, nodeAdded int
	delay, latency             time.Duration
	timeout                    time.Duration
	out                        string
	extra                      []string
	command                    string
	provisionUpdates           time.Duration
	steadyLBs                  int
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 100, "N: Nodes (Nova servers) registered at once")
	flag.IntVar(&o.services, "services", 100, "M: LoadBalancer Services created at once (also the LBs of the restart and node-added scenarios)")
	flag.IntVar(&o.nodeAdded, "node-added-services", benchscenario.NodeAddedLBs, "LoadBalancer Services when one Node is added (those beyond M are created first)")
	flag.DurationVar(&o.delay, "provision-delay", 10*time.Second, "D: how long each new load balancer stays PENDING_CREATE in the fake")
	flag.DurationVar(&o.provisionUpdates, "update-delay", 200*time.Millisecond, "how long a load balancer stays PENDING_UPDATE after a change")
	flag.DurationVar(&o.latency, "latency", 5*time.Millisecond, "latency of every fake OpenStack call")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after")
	flag.StringVar(&o.out, "out", "bin/bench", "folder for openstack.{md,json,svg}")
	flag.IntVar(&o.steadyLBs, "steady-lbs", 100, "unchanged LBs of the in-process restart and resync cost (0: skip)")
	extra := flag.String("ccm-args", "", "more ccm flags, space-separated (e.g. --concurrent-service-syncs=1)")
	flag.Parse()
	o.extra = strings.Fields(*extra)
	o.command = strings.TrimSpace("CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./providers/openstack/bench " + strings.Join(os.Args[1:], " "))
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.nodes < 1 || o.services < 1 {
		return fmt.Errorf("--nodes and --services: want at least 1, got %d and %d", o.nodes, o.services)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	steadyRows, err := steadyState(ctx, o.steadyLBs)
	if err != nil {
		return err
	}
	cl, err := benchscenario.StartCluster(ctx, "openstack")
	if err != nil {
		return err
	}
	defer cl.Stop()
	cloud := fake.New(fake.Options{ProvisionDelay: o.delay, UpdateDelay: o.provisionUpdates})
	cloud.SetLatency(o.latency)
	if _, err := cloud.Start(); err != nil {
		return err
	}
	defer cloud.Close()
	b, err := newBench(o, cl, cloud)
	if err != nil {
		return err
	}
	if b.ccm, err = b.start(ctx, "ccm-1"); err != nil {
		return err
	}
	b.f = &benchscenario.Figures{Nodes: o.nodes, Services: o.services, Delay: o.delay, RestartLBs: o.services, NodeAddedLBs: max(o.services, o.nodeAdded)}
	if err := benchscenario.RunAll(ctx, b.registerNodes, b.createServices, b.restart, b.nodeAdded); err != nil {
		return err
	}
	b.ccm.Stop(10 * time.Second)

	return benchscenario.Report("openstack", o.command, b.f, o.out, append(b.extra, steadyRows...)...)
}

// steadyState measures, in-process, the restart, resync and takeover cost of n unchanged load
// balancers, without and with security groups (0: skipped).
func steadyState(ctx context.Context, n int) ([]benchreport.Row, error) {
	var rows []benchreport.Row
	if n <= 0 {
		return rows, nil
	}
	for _, sg := range []string{"", "manage-security-groups = true"} {
		fmt.Printf("bench: restart and resync cost of %d unchanged LBs in-process %s\n", n, sg)
		s, err := measureSteady(ctx, n, sg)
		if err != nil {
			return nil, fmt.Errorf("steady-state cost: %w", err)
		}
		label := ""
		if sg != "" {
			label = " with security groups"
		}
		fmt.Printf("bench: restart%s: %d writes, %.2f reads per LB (%s)\n", label, s.RestartWrites, float64(s.RestartReads)/float64(s.LBs), benchscenario.Format(s.RestartByOp))
		fmt.Printf("bench: resync%s: %d writes, %.2f reads per LB (%s)\n", label, s.ResyncWrites, float64(s.ResyncReads)/float64(s.LBs), benchscenario.Format(s.ResyncByOp))
		rows = append(rows, s.rows(label)...)
		tk, err := measureTakeover(ctx, n, sg != "")
		if err != nil {
			return nil, fmt.Errorf("takeover from the upstream CCM: %w", err)
		}
		fmt.Printf("bench: takeover%s: %s (%s)\n", label, tk, benchscenario.Format(tk.ByOp))
		rows = append(rows, tk.rows(label)...)
	}
	return rows, nil
}

// bench is the cluster scenarios' state: the fake cloud, its config and servers, the running
// ccm, and the figures and extra rows taken so far.
type bench struct {
	o          options
	cl         *benchscenario.Cluster
	cloud      *fake.Cloud
	conf       string
	names, ips []string
	ccm        *testenv.CCM
	f          *benchscenario.Figures
	extra      []benchreport.Row
}

// newBench writes the cloud config and adds the N servers; the last name and IP are kept for
// the node-added scenario.
func newBench(o options, cl *benchscenario.Cluster, cloud *fake.Cloud) (*bench, error) {
	b := &bench{o: o, cl: cl, cloud: cloud, conf: filepath.Join(cl.Env.Dir, "cloud.conf")}
	if err := os.WriteFile(b.conf, []byte(cloud.CloudConfig("floating-network-id = "+fake.PublicNetworkID, "pending-retry = 2s")), 0o600); err != nil {
		return nil, err
	}
	b.names = make([]string, o.nodes+1) // the last one is the node-added scenario's
	b.ips = make([]string, len(b.names))
	for i := range b.names {
		b.names[i] = fmt.Sprintf("bench-node-%04d", i)
		b.ips[i] = fmt.Sprintf("10.0.%d.%d", 1+i/250, i%250+2)
		if i < o.nodes {
			cloud.AddServer(fake.ServerSpec{Name: b.names[i], IPs: []string{b.ips[i]}})
		}
	}
	return b, nil
}

func (b *bench) start(ctx context.Context, name string) (*testenv.CCM, error) {
	return benchscenario.StartLeader(ctx, b.cl.Env, testenv.CCMOptions{Name: name, Binary: b.cl.Binary, Provider: "openstack", CloudConfig: b.conf, Args: b.o.extra})
}

// total is the number of fake OpenStack calls so far.
func (b *bench) total() int {
	n := 0
	for _, v := range b.cloud.Calls() {
		n += v
	}
	return n
}

func (b *bench) quiet(ctx context.Context, d time.Duration) { benchscenario.QuietFor(ctx, d, b.total) }

// registerNodes: N Nodes at once.
func (b *bench) registerNodes(ctx context.Context) error {
	fmt.Printf("bench: registering %d Nodes at once\n", b.o.nodes)
	c0 := b.total()
	var err error
	if b.f.NodeTimes, err = benchscenario.RegisterNodes(ctx, b.cl, b.ccm, b.names[:b.o.nodes]); err != nil {
		return err
	}
	b.quiet(ctx, 2*time.Second)
	b.f.NodeCalls = float64(b.total() - c0)
	return nil
}

// createServices: M Services at once, each LB PENDING_CREATE for D.
func (b *bench) createServices(ctx context.Context) error {
	o, cloud := b.o, b.cloud
	fmt.Printf("bench: creating %d LoadBalancer Services at once (D=%v)\n", o.services, o.delay)
	before := cloud.Calls()
	c0 := b.total()
	var err error
	if b.f.ServiceTimes, err = benchscenario.CreateServices(ctx, b.cl, b.ccm, "bench", o.services, nil); err != nil {
		return err
	}
	b.quiet(ctx, 2*time.Second)
	b.f.LBCalls = float64(b.total() - c0)
	created := benchscenario.Diff(before, cloud.Calls())
	b.extra = append(b.extra,
		benchreport.Row{Key: "provider.keystone_tokens", Scenario: "Nodes and Services (one process)", Measure: "Keystone tokens issued", Value: float64(cloud.TokensIssued()),
			Target: "1", Met: benchreport.Met(cloud.TokensIssued() == 1)},
		benchreport.Row{Key: "provider.lb_creates", Scenario: fmt.Sprintf("%d LB Services at once", o.services), Measure: "Octavia creates / listener or member writes after them",
			Value: float64(created["octavia.CreateLoadBalancer"]), Text: fmt.Sprintf("%d / %d", created["octavia.CreateLoadBalancer"], created["octavia.CreateListener"]+created["octavia.BatchUpdateMembers"]),
			Target: fmt.Sprintf("%d / 0", o.services), Met: benchreport.Met(created["octavia.CreateLoadBalancer"] == o.services && created["octavia.CreateListener"]+created["octavia.BatchUpdateMembers"] == 0)})
	return nil
}

// restart with nothing changed: a new process re-ensures every Service.
func (b *bench) restart(ctx context.Context) error {
	o, cloud, f := b.o, b.cloud, b.f
	before, w0 := cloud.Calls(), cloud.Writes()
	var err error
	if b.ccm, err = benchscenario.Restart(ctx, b.cl, b.ccm, func(name string) (*testenv.CCM, error) { return b.start(ctx, name) }, o.services); err != nil {
		return err
	}
	b.quiet(ctx, 3*time.Second)
	after := benchscenario.Diff(before, cloud.Calls())
	f.RestartWrites = float64(cloud.Writes() - w0)
	for op, n := range after {
		if op != "keystone.CreateToken" {
			f.RestartReads += float64(n)
		}
	}
	f.RestartReads -= f.RestartWrites
	b.extra = append(b.extra, benchreport.Row{Key: "provider.restart_tokens", Scenario: fmt.Sprintf("restart, nothing changed (%d LBs)", o.services),
		Measure: "Keystone tokens (not counted as reads)", Value: float64(after["keystone.CreateToken"]), Target: "1 (new process)", Met: benchreport.Met(after["keystone.CreateToken"] == 1)})
	fmt.Printf("bench: restart calls by operation: %s\n", benchscenario.Format(after))
	return nil
}

// nodeAdded: one Node added, every LB's pool gets the new member. A timeout is printed, not
// returned: the figures show how far it got.
func (b *bench) nodeAdded(ctx context.Context) error {
	o, cloud, f := b.o, b.cloud, b.f
	if err := benchscenario.TopUpServices(ctx, b.cl, b.ccm, o.services, f.NodeAddedLBs, nil); err != nil {
		return err
	}
	b.quiet(ctx, 3*time.Second)
	fmt.Printf("bench: adding one Node to %d load balancers\n", f.NodeAddedLBs)
	newNode, newIP := b.names[o.nodes], b.ips[o.nodes]
	cloud.AddServer(fake.ServerSpec{Name: newNode, IPs: []string{newIP}})
	w0 := cloud.Writes()
	t0 := time.Now()
	before := cloud.Calls()
	if err := testenv.RegisterNode(ctx, b.cl.Env.Client, newNode); err != nil {
		return err
	}
	err := benchscenario.Poll(ctx, 3*time.Minute, "every load balancer with the new member", func() (bool, error) {
		f.NodeAddedUpdated = withMember(cloud.LoadBalancers(), newIP)
		return f.NodeAddedUpdated >= f.NodeAddedLBs, nil
	})
	f.NodeAddedS = time.Since(t0).Seconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	b.quiet(ctx, 3*time.Second)
	f.NodeAddedWrites = float64(cloud.Writes() - w0)
	fmt.Printf("bench: node-added calls by operation: %s\n", benchscenario.Format(benchscenario.Diff(before, cloud.Calls())))
	return nil
}

// withMember counts the load balancers whose every listener has a member at ip.
func withMember(lbs []fake.LoadBalancer, ip string) int {
	n := 0
	for _, lb := range lbs {
		ok := len(lb.Listeners) > 0
		for _, l := range lb.Listeners {
			has := false
			for _, m := range l.Members {
				has = has || strings.HasPrefix(m, ip+":")
			}
			ok = ok && has
		}
		if ok {
			n++
		}
	}
	return n
}
