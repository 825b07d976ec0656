// Package benchscenario is what every provider bench (providers/NAME/bench) shares to run the
// issue-9 scenarios on the local control plane: watching Nodes and Services until done,
// per-object latencies, the rows and targets of the common report, and starting the ccm.
package benchscenario

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/ccm-project/ccm/common/benchreport"
	"github.com/ccm-project/ccm/common/testenv"
)

// Figures are one run's results in the terms.
type Figures struct {
	Nodes     int
	NodeTimes []float64 // seconds from registration to initialised, per Node
	NodeCalls float64   // cloud calls while they were initialised

	Services     int
	ServiceTimes []float64     // seconds from creation to an address, per Service
	LBCalls      float64       // cloud calls while they were created
	Delay        time.Duration // provisioning delay D in the simulator; 0 for none

	RestartLBs                  int
	RestartWrites, RestartReads float64

	NodeAddedLBs     int     // LBs that should get the new Node
	NodeAddedUpdated int     // LBs that had it at the end
	NodeAddedWrites  float64 // cloud writes the addition caused
	NodeAddedS       float64 // until every LB had it
}

// Initialised is the "time to initialised": providerID set and the taint gone.
func Initialised(obj any) bool {
	n := obj.(*v1.Node)
	return n.Spec.ProviderID != "" && !testenv.HasTaint(n, testenv.UninitializedTaint)
}

func Addressed(obj any) bool { return len(obj.(*v1.Service).Status.LoadBalancer.Ingress) > 0 }

// Watcher follows nodes or services (of a namespace) with an informer, which re-lists if the
// API server closes a watch, and records when done(obj) first held per object and how many
// updates each object had (each one an API write).
type Watcher struct {
	resource string
	want     int
	ctx      context.Context
	stop     context.CancelFunc
	finished chan struct{}

	mu      sync.Mutex
	at      map[string]time.Time
	updates map[string]int
}

// Watch starts a Watcher that is finished when want objects are done. The caller stops it.
func Watch(ctx context.Context, env *testenv.Env, resource, namespace string, want int, done func(any) bool) (*Watcher, error) {
	w := &Watcher{resource: resource, want: want, ctx: ctx, finished: make(chan struct{}), at: map[string]time.Time{}, updates: map[string]int{}}
	observe := func(obj any, update bool) {
		m, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if update {
			w.updates[m.GetName()]++
		}
		if _, seen := w.at[m.GetName()]; !seen && done(obj) {
			w.at[m.GetName()] = time.Now()
			if len(w.at) == want {
				close(w.finished)
			}
		}
	}
	var wctx context.Context
	wctx, w.stop = context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(namespace))
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
		w.stop()
		return nil, err
	}
	factory.Start(wctx.Done())
	factory.WaitForCacheSync(wctx.Done())
	return w, nil
}

// Wait waits until want objects are done, ctx ends or gone is closed (the ccm exited), and
// returns when each object became done.
func (w *Watcher) Wait(gone <-chan struct{}) map[string]time.Time {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-w.finished:
		case <-w.ctx.Done():
		case <-gone:
		case <-tick.C:
			w.mu.Lock()
			fmt.Printf("bench: %s: %d of %d done\n", w.resource, len(w.at), w.want)
			w.mu.Unlock()
			continue
		}
		break
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.at)
}

// Updates counts the updates seen so far per object.
func (w *Watcher) Updates() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.updates)
}

// Stop ends the watch.
func (w *Watcher) Stop() { w.stop() }

// WatchUntil is Watch for a single Wait: the returned func waits, stops the watch and returns
// the times.
func WatchUntil(ctx context.Context, env *testenv.Env, resource, namespace string, want int, done func(any) bool) (func(gone <-chan struct{}) map[string]time.Time, error) {
	w, err := Watch(ctx, env, resource, namespace, want, done)
	if err != nil {
		return nil, err
	}
	return func(gone <-chan struct{}) map[string]time.Time {
		defer w.Stop()
		return w.Wait(gone)
	}, nil
}

// Parallel runs f(0..n-1), 64 at a time, and returns the first error.
func Parallel(n int, f func(i int) error) error {
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

// Since returns each time as seconds after start.
func Since(at map[string]time.Time, start time.Time) []float64 {
	d := make([]float64, 0, len(at))
	for _, t := range at {
		d = append(d, t.Sub(start).Seconds())
	}
	return d
}

func MaxOf(s []float64) float64 {
	m := 0.0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// Poll calls cond every 100ms until it holds, the timeout passes or ctx ends.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
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

// QuietFor waits until count has not changed for d: the cloud calls a scenario caused have
// all landed.
func QuietFor(ctx context.Context, d time.Duration, count func() int) {
	last, at := count(), time.Now()
	for time.Since(at) < d && ctx.Err() == nil {
		time.Sleep(200 * time.Millisecond)
		if c := count(); c != last {
			last, at = c, time.Now()
		}
	}
}

// WaitEnsured waits until the ccm has ensured n load balancers since it started (the restart
// scenario's end: every Service looked at once).
func WaitEnsured(ctx context.Context, ccm *testenv.CCM, token string, n int) error {
	return Poll(ctx, 5*time.Minute, fmt.Sprintf("the restarted ccm to ensure %d Services", n), func() (bool, error) {
		v, err := ccm.Metric(token, `ccm_reconcile_total{kind="loadbalancer",operation="ensure"`)
		return err == nil && v >= float64(n), err
	})
}

// Rows are the measures with their targets, in the common keys.
func Rows(f *Figures) []benchreport.Row {
	p := benchreport.Percentile
	nodes := fmt.Sprintf("%d Nodes at once", f.Nodes)
	svcs := fmt.Sprintf("%d LB Services at once", f.Services)
	if f.Delay > 0 {
		svcs += fmt.Sprintf(", D=%v", f.Delay)
	}
	out := []benchreport.Row{
		{Key: benchreport.KeyNodeInitNodes, Scenario: nodes, Measure: "Nodes initialised", Value: float64(len(f.NodeTimes)),
			Target: fmt.Sprint(f.Nodes), Met: benchreport.Met(len(f.NodeTimes) == f.Nodes)},
		{Key: benchreport.KeyNodeInitP50, Scenario: nodes, Measure: "time to initialised p50", Value: p(f.NodeTimes, 0.5), Unit: "s"},
		{Key: benchreport.KeyNodeInitP99, Scenario: nodes, Measure: "time to initialised p99", Value: p(f.NodeTimes, 0.99), Unit: "s"},
		{Key: benchreport.KeyNodeInitAll, Scenario: nodes, Measure: "all initialised", Value: MaxOf(f.NodeTimes), Unit: "s"},
		{Key: benchreport.KeyNodeInitCallsPerNode, Scenario: nodes, Measure: "cloud calls per Node", Value: f.NodeCalls / float64(max(f.Nodes, 1))},
		{Key: benchreport.KeyLBServices, Scenario: svcs, Measure: "Services addressed", Value: float64(len(f.ServiceTimes)),
			Target: fmt.Sprint(f.Services), Met: benchreport.Met(len(f.ServiceTimes) == f.Services)},
		{Key: benchreport.KeyLBP50, Scenario: svcs, Measure: "time to an address p50", Value: p(f.ServiceTimes, 0.5), Unit: "s"},
		{Key: benchreport.KeyLBP99, Scenario: svcs, Measure: "time to an address p99", Value: p(f.ServiceTimes, 0.99), Unit: "s"},
		{Key: benchreport.KeyLBAll, Scenario: svcs, Measure: "all addressed", Value: MaxOf(f.ServiceTimes), Unit: "s"},
		{Key: benchreport.KeyLBCallsPerService, Scenario: svcs, Measure: "cloud calls per Service", Value: f.LBCalls / float64(max(f.Services, 1))},
	}
	if f.Delay > 0 {
		inD := MaxOf(f.ServiceTimes) / f.Delay.Seconds()
		row := benchreport.Row{Key: benchreport.KeyLBAllInD, Scenario: svcs, Measure: "all addressed, in units of D", Value: inD,
			Text: fmt.Sprintf("%.2f×D", inD)}
		if f.Services == 100 { // the issue sets the target for 100 Services
			row.Target, row.Met = "<= 2×D", benchreport.Met(inD <= 2 && len(f.ServiceTimes) == f.Services)
		}
		out = append(out, row)
	}
	rs := fmt.Sprintf("restart, nothing changed (%d LBs)", f.RestartLBs)
	na := fmt.Sprintf("one Node added, %d LB Services", f.NodeAddedLBs)
	return append(out,
		benchreport.Row{Key: benchreport.KeyRestartWrites, Scenario: rs, Measure: "cloud writes", Value: f.RestartWrites, Target: "0", Met: benchreport.Met(f.RestartWrites == 0)},
		benchreport.Row{Key: benchreport.KeyRestartReads, Scenario: rs, Measure: "cloud reads", Value: f.RestartReads},
		benchreport.Row{Key: benchreport.KeyNodeAddedLBs, Scenario: na, Measure: "LBs updated", Value: float64(f.NodeAddedUpdated),
			Text: fmt.Sprintf("%d of %d", f.NodeAddedUpdated, f.NodeAddedLBs), Target: "all", Met: benchreport.Met(f.NodeAddedUpdated == f.NodeAddedLBs)},
		benchreport.Row{Key: benchreport.KeyNodeAddedWrites, Scenario: na, Measure: "cloud writes", Value: f.NodeAddedWrites,
			Target: "<= 1 per LB", Met: benchreport.Met(f.NodeAddedWrites <= float64(f.NodeAddedLBs))},
		benchreport.Row{Key: benchreport.KeyNodeAddedAll, Scenario: na, Measure: "until every LB has the Node", Value: f.NodeAddedS, Unit: "s"},
	)
}

// Latencies are the per-object samples for the chart.
func Latencies(f *Figures) []benchreport.Distribution {
	return []benchreport.Distribution{
		{Name: fmt.Sprintf("time to initialised per Node (N=%d)", f.Nodes), Unit: "s", Samples: f.NodeTimes},
		{Name: fmt.Sprintf("time to an address per LB Service (M=%d)", f.Services), Unit: "s", Samples: f.ServiceTimes},
	}
}

// Write prints the table and writes provider.{json,md,svg} under out.
func Write(rep *benchreport.Report, out string) error {
	fmt.Print("\n" + benchreport.Markdown(rep))
	if err := benchreport.Write(out, rep); err != nil {
		return err
	}
	fmt.Printf("\nwritten to %s/%s.{md,json,svg}\n", out, rep.Provider)
	return nil
}

// StartLeader starts a ccm and waits until it leads (its controllers then run). The lease
// timings are the library's defaults rather than testenv's short ones: on a loaded machine a
// 4s lease is lost in the middle of a burst, the ccm exits by design, and the bench would
// measure that instead.
func StartLeader(ctx context.Context, env *testenv.Env, o testenv.CCMOptions) (*testenv.CCM, error) {
	o.Args = append([]string{"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=10s", "--leader-elect-retry-period=2s"}, o.Args...)
	c, err := env.StartCCM(ctx, o)
	if err != nil {
		return nil, err
	}
	err = Poll(ctx, 60*time.Second, o.Name+" to lead", func() (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("ccm exited: %s", c.Tail(20))
		}
		return strings.Contains(c.Log(), "Successfully acquired lease"), nil
	})
	return c, err
}

// Short is the error of a scenario that ended with got of want objects done.
func Short(c *testenv.CCM, what string, got, want int) error {
	why := ""
	if c.Exited() {
		why = ": the ccm exited"
	}
	return fmt.Errorf("%d of %d %s%s (ccm log %s)", got, want, what, why, c.LogPath)
}

// RunAll runs a provider's scenarios in order and stops at the first that fails.
func RunAll(ctx context.Context, scenarios ...func(context.Context) error) error {
	for _, s := range scenarios {
		if err := s(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Report prints and writes a provider's figures: the rows and latencies every provider has,
// then its own rows.
func Report(provider, command string, f *Figures, out string, extra ...benchreport.Row) error {
	rep := benchreport.New(provider)
	rep.Command = command
	rep.Rows = append(Rows(f), extra...)
	rep.Latencies = Latencies(f)
	return Write(rep, out)
}
