// Command bench runs the issue-9 scenarios for the vSphere provider against vcsim (behind the
// simulator's counting gate) on the local control plane: N Nodes (N VMs) registered at once,
// the periodic address refresh of all of them, M LoadBalancer Services created at once
// (addresses from a [Pool], records as vCenter tags), a ccm restart with nothing changed, and
// one Node added to the M load balancers. It prints the table and writes
// bin/bench/vsphere.{json,md,svg} (common/benchreport). `make bench` runs it;
//
//	CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./providers/vsphere/bench --nodes=1000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ccm-project/ccm/common/benchreport"
	"github.com/ccm-project/ccm/common/benchscenario"
	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/common/testenv"
	"github.com/ccm-project/ccm/providers/vsphere/internal/sim"
)

type options struct {
	nodes, services, nodeAdded, dcs, rounds int
	takeoverLBs                             int
	refresh, timeout                        time.Duration
	out, command                            string
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 100, "N: Nodes (and VMs) registered at once")
	flag.IntVar(&o.services, "services", 100, "M: LoadBalancer Services created at once (also the LBs of the restart and node-added scenarios)")
	flag.IntVar(&o.nodeAdded, "node-added-services", benchscenario.NodeAddedLBs, "LoadBalancer Services when one Node is added (those beyond M are created first)")
	flag.IntVar(&o.dcs, "datacenters", 2, "datacenters in the simulated vCenter (VMs spread over them)")
	flag.DurationVar(&o.refresh, "refresh", 10*time.Second, "the ccm's --node-status-update-frequency (periodic address refresh)")
	flag.IntVar(&o.rounds, "rounds", 2, "address refresh rounds to average (0 skips that measure)")
	flag.IntVar(&o.takeoverLBs, "takeover-lbs", 100, "Services served before ccm (MetalLB, kube-vip) of the in-process takeover (0: skip)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after")
	flag.StringVar(&o.out, "out", "bin/bench", "folder for vsphere.{md,json,svg}")
	flag.Parse()
	o.command = strings.TrimSpace("CCM_BIN_DIR=$PWD/bin CCM_TESTBIN=$PWD/bin/testbin go run ./providers/vsphere/bench " + strings.Join(os.Args[1:], " "))
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.nodes < 1 || o.services < 1 || o.dcs < 1 {
		return fmt.Errorf("--nodes, --services and --datacenters: want at least 1, got %d, %d and %d", o.nodes, o.services, o.dcs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var extra []benchreport.Row
	if o.takeoverLBs > 0 {
		tk, err := measureTakeover(ctx, o.takeoverLBs)
		if err != nil {
			return fmt.Errorf("takeover of Services served before ccm: %w", err)
		}
		fmt.Printf("bench: takeover: %s (%s)\n", tk, benchscenario.Format(tk.ByOp))
		extra = append(extra, tk.rows()...)
	}
	cl, err := benchscenario.StartCluster(ctx, "vsphere")
	if err != nil {
		return err
	}
	defer cl.Stop()
	s, err := sim.Start(ctx, sim.Options{User: benchUser, Password: benchPassword, Datacenters: o.dcs, ZoneCategory: "k8s-zone", RegionCategory: "k8s-region"})
	if err != nil {
		return err
	}
	defer s.Close()
	b := &bench{o: o, cl: cl, s: s, extra: extra}
	if err := b.setUp(ctx); err != nil {
		return err
	}
	if b.ccm, err = b.start(ctx, "ccm-1"); err != nil {
		return err
	}
	b.quiet(ctx, time.Second)
	b.f = &benchscenario.Figures{Nodes: o.nodes, Services: o.services, RestartLBs: o.services, NodeAddedLBs: max(o.services, o.nodeAdded)}
	if err := benchscenario.RunAll(ctx, b.registerNodes, b.refreshRounds, b.createServices, b.restart, b.resyncUnchanged, b.nodeAdded); err != nil {
		return err
	}
	b.ccm.Stop(10 * time.Second)

	return benchscenario.Report("vsphere", o.command, b.f, o.out, b.extra...)
}

const benchUser, benchPassword = "bench@vsphere.local", "bench-password"

// bench is the cluster scenarios' state: the simulator, the config and VM names, the running
// ccm, and the figures and extra rows taken so far.
type bench struct {
	o       options
	cl      *benchscenario.Cluster
	s       *sim.Sim
	cfgPath string
	names   []string
	ccm     *testenv.CCM
	f       *benchscenario.Figures
	extra   []benchreport.Row
}

// setUp creates the N VMs (the last name is kept for the node-added scenario) and writes the
// cloud config.
func (b *bench) setUp(ctx context.Context) error {
	o := b.o
	b.names = make([]string, o.nodes+1) // the last one is the node-added scenario's
	fmt.Printf("bench: creating %d VMs\n", o.nodes)
	for i := range b.names {
		b.names[i] = fmt.Sprintf("bench-%04d", i)
		if i < o.nodes {
			if err := b.addVM(ctx, i); err != nil {
				return err
			}
		}
	}
	var dcList []string
	for i := range o.dcs {
		dcList = append(dcList, sim.DatacenterName(i))
	}
	// cache-ttl below the refresh period, so every refresh round reads vCenter (the worst case).
	cfg := fmt.Sprintf("[Global]\nserver = %s\nport = %s\nuser = %q\npassword = %q\ninsecure-flag = 1\ndatacenters = %q\ncache-ttl = %s\n\n"+
		"[Labels]\nzone = k8s-zone\nregion = k8s-region\n\n[Pool \"bench\"]\ncidr = 10.128.0.0/16\n",
		b.s.Host(), b.s.Port(), benchUser, benchPassword, strings.Join(dcList, ","), o.refresh/2)
	b.cfgPath = filepath.Join(b.cl.Env.Dir, "vsphere.conf")
	return os.WriteFile(b.cfgPath, []byte(cfg), 0o600)
}

func (b *bench) addVM(ctx context.Context, i int) error {
	_, err := b.s.AddVM(ctx, b.names[i], i%b.o.dcs, 0, []sim.NIC{{Network: "VM Network", IPs: []string{fmt.Sprintf("10.8.%d.%d", i/250, i%250+1)}}})
	return err
}

func (b *bench) start(ctx context.Context, name string) (*testenv.CCM, error) {
	return benchscenario.StartLeader(ctx, b.cl.Env, testenv.CCMOptions{Name: name, Binary: b.cl.Binary, Provider: "vsphere", CloudConfig: b.cfgPath,
		Args: []string{"--node-status-update-frequency=" + b.o.refresh.String()}})
}

func (b *bench) quiet(ctx context.Context, d time.Duration) {
	benchscenario.QuietFor(ctx, d, func() int { return b.s.Calls().Total })
}

// registerNodes: N Nodes at once, with the sessions their initialisation opens.
func (b *bench) registerNodes(ctx context.Context) error {
	o, s := b.o, b.s
	fmt.Printf("bench: registering %d Nodes at once\n", o.nodes)
	c0 := s.Calls()
	var err error
	if b.f.NodeTimes, err = benchscenario.RegisterNodes(ctx, b.cl, b.ccm, b.names[:o.nodes]); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond) // the last calls land
	init := sub(s.Calls(), c0)
	b.f.NodeCalls = float64(init.Total)
	sessions := 0
	for op, n := range init.PerOp {
		if strings.HasPrefix(op, "POST ") && strings.HasSuffix(op, "/session") {
			sessions += n
		}
	}
	scen := fmt.Sprintf("%d Nodes at once (%d datacenters)", o.nodes, o.dcs)
	b.extra = append(b.extra,
		benchreport.Row{Key: "provider.node_init.soap_logins", Scenario: scen, Measure: "SOAP sessions opened (Login)", Value: float64(init.PerOp["Login"]),
			Target: "<= 1 per vCenter", Met: benchreport.Met(init.PerOp["Login"] <= 1)},
		benchreport.Row{Key: "provider.node_init.vapi_sessions", Scenario: scen, Measure: "vAPI (tagging) sessions opened", Value: float64(sessions)})
	fmt.Printf("bench: initialisation calls by operation: %s\n", benchscenario.Format(init.PerOp))
	return nil
}

// refreshRounds watches the periodic address refresh: it counts the bursts of calls (one per
// round) over a few rounds, so the figure is per observed round (--rounds 0: skipped).
func (b *bench) refreshRounds(context.Context) error {
	o, s := b.o, b.s
	if o.rounds <= 0 {
		return nil
	}
	fmt.Printf("bench: watching %d address refresh rounds of %v\n", o.rounds, o.refresh)
	r0 := s.Calls()
	prev, bursts, lastChange := r0.Total, 0, time.Time{}
	for end := time.Now().Add(time.Duration(o.rounds)*o.refresh + o.refresh/2); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if t := s.Calls().Total; t != prev {
			if time.Since(lastChange) > o.refresh/2 {
				bursts++
			}
			prev, lastChange = t, time.Now()
		}
	}
	time.Sleep(500 * time.Millisecond)
	ref := sub(s.Calls(), r0)
	perRound := float64(ref.Total) / float64(max(bursts, 1))
	rs := fmt.Sprintf("address refresh of %d Nodes every %v (%d rounds seen)", o.nodes, o.refresh, bursts)
	b.extra = append(b.extra,
		benchreport.Row{Key: "provider.refresh.calls_per_round", Scenario: rs, Measure: "vCenter calls per refresh of all Nodes", Value: perRound},
		benchreport.Row{Key: "provider.refresh.calls_per_node", Scenario: rs, Measure: "vCenter calls per Node per refresh", Value: perRound / float64(o.nodes),
			Target: "<= 0.6", Met: benchreport.Met(perRound/float64(o.nodes) <= 0.6)},
		benchreport.Row{Key: "provider.refresh.writes", Scenario: rs, Measure: "vCenter writes", Value: float64(ref.Writes), Target: "0", Met: benchreport.Met(ref.Writes == 0)})
	fmt.Printf("bench: refresh calls by operation: %s\n", benchscenario.Format(ref.PerOp))
	return nil
}

// createServices: M Services at once.
func (b *bench) createServices(ctx context.Context) error {
	o, s := b.o, b.s
	fmt.Printf("bench: creating %d LoadBalancer Services at once\n", o.services)
	c0 := s.Calls()
	var err error
	if b.f.ServiceTimes, err = benchscenario.CreateServices(ctx, b.cl, b.ccm, "bench", o.services, nil); err != nil {
		return err
	}
	b.quiet(ctx, 2*time.Second)
	lb := sub(s.Calls(), c0)
	b.f.LBCalls = float64(lb.Total)
	b.extra = append(b.extra, benchreport.Row{Key: "provider.lb.writes_per_service", Scenario: fmt.Sprintf("%d LB Services at once", o.services),
		Measure: "cloud writes per Service", Value: float64(lb.Writes) / float64(o.services)})
	fmt.Printf("bench: LB calls by operation: %s\n", benchscenario.Format(lb.PerOp))
	return nil
}

// restart with nothing changed: a new process re-ensures every Service. Its periodic
// address refresh runs too; those reads count, as they would on a real restart.
func (b *bench) restart(ctx context.Context) error {
	o, s := b.o, b.s
	c0 := s.Calls()
	var err error
	if b.ccm, err = benchscenario.Restart(ctx, b.cl, b.ccm, func(name string) (*testenv.CCM, error) { return b.start(ctx, name) }, o.services); err != nil {
		return err
	}
	b.quiet(ctx, 2*time.Second)
	rs := sub(s.Calls(), c0)
	b.f.RestartWrites, b.f.RestartReads = float64(rs.Writes), float64(rs.Total-rs.Writes)
	fmt.Printf("bench: restart calls by operation: %s\n", benchscenario.Format(rs.PerOp))
	restartScen := fmt.Sprintf("restart, %d unchanged LBs", o.services)
	b.extra = append(b.extra, benchreport.Row{Key: "provider.restart.reads_per_lb", Scenario: restartScen,
		Measure: "vCenter reads per LB (node refresh and logins included)", Value: float64(rs.Total-rs.Writes) / float64(o.services)})
	return nil
}

// resyncUnchanged: periodic resync of unchanged LBs: every Service is synced again (an
// annotation the provider does not read makes the service controller re-ensure it). Each sync
// compares its record with vCenter's: one read each, no write.
func (b *bench) resyncUnchanged(ctx context.Context) error {
	return resync(ctx, b.cl, b.ccm, b.o.services, b.s, func(d time.Duration) { b.quiet(ctx, d) }, &b.extra)
}

// nodeAdded: one Node added, every LB record (its fingerprint covers the members) is
// rewritten. A timeout is printed, not returned: the figures show how far it got.
func (b *bench) nodeAdded(ctx context.Context) error {
	o, s, f := b.o, b.s, b.f
	if err := benchscenario.TopUpServices(ctx, b.cl, b.ccm, o.services, f.NodeAddedLBs, nil); err != nil {
		return err
	}
	b.quiet(ctx, 2*time.Second)
	fmt.Printf("bench: adding one Node to %d load balancers\n", f.NodeAddedLBs)
	old, err := s.TagsInCategory(ctx, sim.LBCategory)
	if err != nil {
		return err
	}
	if len(old) != f.NodeAddedLBs {
		return fmt.Errorf("node added: %d load balancer records before, want %d", len(old), f.NodeAddedLBs)
	}
	if err := b.addVM(ctx, o.nodes); err != nil {
		return err
	}
	b.quiet(ctx, time.Second)
	c0 := s.Calls()
	t0 := time.Now()
	if err := testenv.RegisterNode(ctx, b.cl.Env.Client, b.names[o.nodes]); err != nil {
		return err
	}
	err = benchscenario.Poll(ctx, 3*time.Minute, "every load balancer record with the new Node", func() (bool, error) {
		now, err := s.TagsInCategory(ctx, sim.LBCategory)
		if err != nil {
			return false, err
		}
		f.NodeAddedUpdated = 0
		for name, desc := range old {
			if d, ok := now[name]; ok && d != desc {
				f.NodeAddedUpdated++
			}
		}
		return f.NodeAddedUpdated == len(old), nil
	})
	f.NodeAddedS = time.Since(t0).Seconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	b.quiet(ctx, 3*time.Second)
	na := sub(s.Calls(), c0)
	f.NodeAddedWrites = float64(na.Writes)
	fmt.Printf("bench: node-added calls by operation: %s\n", benchscenario.Format(na.PerOp))
	return nil
}

// resync re-ensures the m bench Services with nothing changed and adds its rows.
func resync(ctx context.Context, cl *benchscenario.Cluster, ccm *testenv.CCM, m int, s *sim.Sim, quiet func(time.Duration), extra *[]benchreport.Row) error {
	fmt.Printf("bench: resyncing %d unchanged load balancers\n", m)
	const ensured = `ccm_reconcile_total{kind="loadbalancer",operation="ensure"`
	v0, err := ccm.Metric(cl.Token, ensured)
	if err != nil {
		return err
	}
	c0 := s.Calls()
	patch := []byte(`{"metadata":{"annotations":{"bench.ccm.io/resync":"1"}}}`)
	if err := benchscenario.Parallel(m, func(i int) error {
		_, err := cl.Client.CoreV1().Services("default").Patch(ctx, fmt.Sprintf("bench-%04d", i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := benchscenario.Poll(ctx, 3*time.Minute, fmt.Sprintf("the ccm to re-ensure %d Services", m), func() (bool, error) {
		v, err := ccm.Metric(cl.Token, ensured)
		return err == nil && v >= v0+float64(m), err
	}); err != nil {
		return err
	}
	quiet(2 * time.Second)
	rs := sub(s.Calls(), c0)
	scen := fmt.Sprintf("periodic resync, %d unchanged LBs", m)
	*extra = append(*extra,
		benchreport.Row{Key: "provider.resync.writes", Scenario: scen, Measure: "vCenter writes", Value: float64(rs.Writes), Target: "0", Met: benchreport.Met(rs.Writes == 0)},
		benchreport.Row{Key: "provider.resync.reads_per_lb", Scenario: scen, Measure: "vCenter reads per LB", Value: float64(rs.Total-rs.Writes) / float64(m),
			Target: "<= 1 (its record)", Met: benchreport.Met(rs.Total-rs.Writes <= m)})
	fmt.Printf("bench: resync calls by operation: %s\n", benchscenario.Format(rs.PerOp))
	return nil
}

// sub is a minus b, per operation.
func sub(a, b simcontrol.Calls) simcontrol.Calls {
	out := simcontrol.Calls{Total: a.Total - b.Total, Writes: a.Writes - b.Writes, Failed: a.Failed - b.Failed, Throttled: a.Throttled - b.Throttled, PerOp: map[string]int{}}
	for k, v := range a.PerOp {
		if d := v - b.PerOp[k]; d != 0 {
			out.PerOp[k] = d
		}
	}
	return out
}
