package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/common/testenv"
)

// orphans: load balancers orphaned the way issue 16 describes, and collected. Services get
// their load balancers, are changed while the ccm is SIGKILLed at planned points; then, while
// the last ccm is SIGKILLed (right after a port change of the Services about to be orphaned),
// the cleanup finalizer is removed by hand from some Services, which are deleted (one is made
// again under its name: a new UID) or turned into ClusterIP Services. `ccm gc --dry-run` lists
// the orphans and deletes nothing; a ccm with --orphan-grace-period=0 reports them (gauge, log,
// Warning Events) and deletes nothing; one with a short grace deletes them. Every verdict is
// read at the simulator (simcontrol Resources and Calls; for the dummy its record ConfigMaps):
// nothing of an orphan is left, the other Services' load balancers were not deleted, and the
// Service made again has its own load balancer.
func orphans(h *harness) result {
	const ns = "orphans"
	plan := planOrphans(h.seed, h.sz.orphanServices, h.sz.orphanKills)
	figs := map[string]string{"seed": fmt.Sprint(plan.Seed), "replay": h.replay}
	o := &orphanRun{h: h, ns: ns, plan: plan, figs: figs}
	if r, ok := o.orphan(); !ok {
		return withFigures(r, figs)
	}
	if r, ok := o.dryRun(); !ok {
		return withFigures(r, figs)
	}
	if r, ok := o.reportOnly(); !ok {
		return withFigures(r, figs)
	}
	if r, ok := o.collect(); !ok {
		return withFigures(r, figs)
	}
	return withFigures(pass(fmt.Sprintf("%d Services, %d SIGKILLs; %d orphans (%d deleted, %d made again, %d ClusterIP) reported with grace 0 and "+
		"deleted %s after a ccm with %v grace started; 0 load balancers of the %d other Services deleted",
		len(plan.Services), len(plan.Churn.Kills)+1, len(plan.orphaned()), len(plan.Deleted), len(plan.Recreated), len(plan.ClusterIP),
		figs["deleted after start"], orphanGrace, len(plan.Live)), nil), figs)
}

// The collecting ccms' flags: a round a second, and a grace that outlasts a few rounds.
const (
	orphanPeriod = time.Second
	orphanGrace  = 3 * time.Second
	// testCluster is the --cluster-name testenv gives every ccm.
	testCluster = "testcluster"
)

// orphanPlan is the scenario drawn from the seed. Every Service is in exactly one role.
type orphanPlan struct {
	Seed     int64
	Services []string  // created first; each has an address before the churn
	Churn    churnPlan // port changes of the Services with SIGKILLs at planned points
	// Done by hand while the last ccm is SIGKILLed, each Service's finalizer removed:
	Deleted   []string // deleted; the even ones are deleted first and then freed of the finalizer (a Service stuck terminating)
	Recreated []string // deleted and created again under the same name (a new UID)
	ClusterIP []string // type changed to ClusterIP
	Live      []string // left alone: their load balancers must not be touched
	// The orphans-to-be get a port change and the last ccm is SIGKILLed KillDelay after it.
	KillDelay time.Duration
}

// planOrphans draws the roles (a quarter deleted, a tenth made again, a tenth ClusterIP, at
// least two, one and one; the rest live, at least one), as many port changes as Services at
// random, and kills SIGKILLs among them (planKills).
func planOrphans(seed int64, services, kills int) orphanPlan {
	services = max(services, 5)
	rng := rand.New(rand.NewSource(seed ^ 0x6f727068)) // not the churn's draws
	p := orphanPlan{Seed: seed}
	for i := range services {
		p.Services = append(p.Services, fmt.Sprintf("o-%d", i))
	}
	order := append([]string(nil), p.Services...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	take := func(n int) []string {
		out := append([]string(nil), order[:n]...)
		order = order[n:]
		sort.Strings(out)
		return out
	}
	p.Deleted = take(max(2, services/4))
	p.Recreated = take(max(1, services/10))
	p.ClusterIP = take(max(1, services/10))
	p.Live = take(len(order))
	p.Churn.Seed = seed
	for range services {
		p.Churn.Ops = append(p.Churn.Ops, churnOp{Kind: opUpdate, Service: p.Services[rng.Intn(services)],
			Port: int32(1000 + rng.Intn(1000)), Pause: time.Duration(rng.Intn(300)) * time.Millisecond})
	}
	p.Churn.Kills = planKills(rng, len(p.Churn.Ops), kills)
	p.KillDelay = time.Duration(rng.Int63n(int64(300 * time.Millisecond)))
	return p
}

// orphaned are the Services whose load balancers become orphans, sorted.
func (p orphanPlan) orphaned() []string {
	out := append(append(append([]string(nil), p.Deleted...), p.Recreated...), p.ClusterIP...)
	sort.Strings(out)
	return out
}

// lbOps are, per simulator, the calls that create and delete a load balancer itself (vSphere:
// its record, a tag). The dummy has no cloud API: its records are watched instead.
var lbOps = map[string]struct{ create, delete []string }{
	"aws":       {create: []string{"elb:CreateLoadBalancer", "elbv2:CreateLoadBalancer"}, delete: []string{"elb:DeleteLoadBalancer", "elbv2:DeleteLoadBalancer"}},
	"openstack": {create: []string{"octavia.CreateLoadBalancer"}, delete: []string{"octavia.DeleteLoadBalancer"}},
	"vsphere":   {create: []string{"POST /rest/com/vmware/cis/tagging/tag"}, delete: []string{"DELETE /rest/com/vmware/cis/tagging/tag"}},
}

// isDeleteOp tells a call that removes something (an object, a rule, a member, an address) from
// one that reads or adds: "elb:DeleteLoadBalancer", "ec2:RevokeSecurityGroupIngress",
// "neutron.DeleteFloatingIP", "DELETE /rest/...", "POST /rest/...?~action=detach", "Destroy_Task".
// vSphere's session housekeeping (views, property filters and collectors, the session itself)
// removes nothing of the cloud's and does not count.
func isDeleteOp(op string) bool {
	for _, own := range []string{"/session", "View", "PropertyFilter", "PropertyCollector"} {
		if strings.Contains(op, own) {
			return false
		}
	}
	verb := op
	if method, path, ok := strings.Cut(op, " "); ok { // vSphere's vAPI
		if method == "DELETE" {
			return true
		}
		_, verb, _ = strings.Cut(path, "action=")
	} else if i := strings.LastIndexAny(op, ":."); i >= 0 {
		verb = op[i+1:]
	}
	verb = strings.ToLower(verb)
	for _, p := range []string{"delete", "destroy", "revoke", "remove", "deregister", "detach", "release", "disassociate"} {
		if strings.HasPrefix(verb, p) {
			return true
		}
	}
	return false
}

// callDelta is after minus before, per operation, without the zeros.
func callDelta(before, after simcontrol.Calls) map[string]int {
	out := map[string]int{}
	for op, n := range after.PerOp {
		if d := n - before.PerOp[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

// sumOps adds up the delta's calls of ops (all of them when ops is nil) that keep passes.
func sumOps(delta map[string]int, ops []string, keep func(string) bool) int {
	n := 0
	for op, d := range delta {
		if (ops == nil || contains(ops, op)) && (keep == nil || keep(op)) {
			n += d
		}
	}
	return n
}

// formatOps prints a delta as "op n, op n" (largest first, at most max entries).
func formatOps(delta map[string]int, keep func(string) bool, limit int) string {
	type kv struct {
		op string
		n  int
	}
	var all []kv
	for op, n := range delta {
		if keep == nil || keep(op) {
			all = append(all, kv{op, n})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].op < all[j].op
	})
	var parts []string
	for i, e := range all {
		if i == limit {
			parts = append(parts, fmt.Sprintf("… %d more", len(all)-limit))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", e.op, e.n))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// resourcesOf groups resources by Service ("namespace/name") as sorted "kind name" strings.
func resourcesOf(res []simcontrol.Resource) map[string][]string {
	out := map[string][]string{}
	for _, r := range res {
		out[r.Service] = append(out[r.Service], r.Kind+" "+r.Name)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// kindCounts counts a Service's resources by kind.
func kindCounts(items []string) map[string]int {
	out := map[string]int{}
	for _, it := range items {
		kind, _, _ := strings.Cut(it, " ")
		out[kind]++
	}
	return out
}

// missing are the resources of before that after no longer holds.
func missing(before, after []simcontrol.Resource) []string {
	have := map[simcontrol.Resource]bool{}
	for _, r := range after {
		have[r] = true
	}
	var out []string
	for _, r := range before {
		if !have[r] {
			out = append(out, fmt.Sprintf("%s %s of %s", r.Kind, r.Name, r.Service))
		}
	}
	return out
}

// collectedProblems compares the cloud before the collecting ccm started with now, for the plan
// (Services of ns): nothing of an orphaned Service that is gone or ClusterIP is left; every
// live Service has exactly the resources it had; the Service made again has a load balancer and
// as many resources of each kind as its predecessor had (a leftover would double one). Empty:
// collected. Pure.
func collectedProblems(ns string, p orphanPlan, before, after []simcontrol.Resource) []string {
	b, a := resourcesOf(before), resourcesOf(after)
	var out []string
	for _, s := range append(append([]string(nil), p.Deleted...), p.ClusterIP...) {
		if left := a[ns+"/"+s]; len(left) > 0 {
			out = append(out, fmt.Sprintf("%s/%s (orphaned) still has %s", ns, s, strings.Join(left, ", ")))
		}
	}
	for _, s := range p.Live {
		k := ns + "/" + s
		if strings.Join(b[k], ", ") != strings.Join(a[k], ", ") {
			out = append(out, fmt.Sprintf("%s (live) had [%s], has [%s]", k, strings.Join(b[k], ", "), strings.Join(a[k], ", ")))
		}
	}
	for _, s := range p.Recreated {
		k := ns + "/" + s
		was, is := kindCounts(b[k]), kindCounts(a[k])
		if is["loadbalancer"] != 1 {
			out = append(out, fmt.Sprintf("%s (made again) has %d load balancers, want 1: [%s]", k, is["loadbalancer"], strings.Join(a[k], ", ")))
			continue
		}
		union := map[string]int{}
		for k := range was {
			union[k] = 1
		}
		for k := range is {
			union[k] = 1
		}
		for _, kind := range sortedKeys(union) {
			if is[kind] > was[kind] {
				out = append(out, fmt.Sprintf("%s (made again) has %d %s, its predecessor had %d (a leftover?): [%s]", k, is[kind], kind, was[kind], strings.Join(a[k], ", ")))
			}
		}
	}
	return out
}

// orphanLBs counts the load balancers of the plan's orphaned Services in res.
func orphanLBs(ns string, p orphanPlan, res []simcontrol.Resource) int {
	orph := map[string]bool{}
	for _, s := range p.orphaned() {
		orph[ns+"/"+s] = true
	}
	n := 0
	for _, r := range res {
		if r.Kind == "loadbalancer" && orph[r.Service] {
			n++
		}
	}
	return n
}

// metricSample reads the sum of the samples of series (a metric name and "{", or a whole series)
// from a /metrics body, and whether there is any: an absent gauge is not 0.
func metricSample(body, series string) (float64, bool, error) {
	var sum float64
	found := false
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, series) {
			continue
		}
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, false, fmt.Errorf("metric line %q: %w", l, err)
		}
		sum += v
		found = true
	}
	return sum, found, nil
}

// gcListing is what `ccm gc` printed: each load balancer's Service and verdict, and its summary.
type gcListing struct {
	Verdicts map[string][]string // Service -> verdicts (one per load balancer)
	Total    int
	Orphaned int
	DryRun   bool
}

// parseGC reads `ccm gc` output (cmd/internal/app/gc.go): a table LOAD BALANCER, SERVICE, UID,
// VERDICT, then "N load balancers of cluster C, M orphaned; dry run: nothing deleted" (or ",
// D deleted"). Pure.
func parseGC(out string) (gcListing, error) {
	g := gcListing{Verdicts: map[string][]string{}}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "LOAD BALANCER") {
			header = i
			break
		}
	}
	if header < 0 || len(lines) < header+2 {
		return g, fmt.Errorf("no table in the output")
	}
	summary := lines[len(lines)-1]
	var cluster string
	if _, err := fmt.Sscanf(summary, "%d load balancers of cluster %s %d orphaned", &g.Total, &cluster, &g.Orphaned); err != nil {
		return g, fmt.Errorf("summary %q: %w", summary, err)
	}
	g.DryRun = strings.HasSuffix(summary, "; dry run: nothing deleted")
	for _, l := range lines[header+1 : len(lines)-1] {
		f := strings.Fields(l)
		if len(f) < 4 {
			return g, fmt.Errorf("row %q: want LOAD BALANCER, SERVICE, UID, VERDICT", l)
		}
		g.Verdicts[f[1]] = append(g.Verdicts[f[1]], strings.Join(f[3:], " "))
	}
	if n := len(lines) - header - 2; n != g.Total {
		return g, fmt.Errorf("%d rows, the summary says %d load balancers", n, g.Total)
	}
	return g, nil
}

// orphanRun is one run of the scenario: what the steps share.
type orphanRun struct {
	h    *harness
	ns   string
	plan orphanPlan
	figs map[string]string
	j    *journal

	uids     map[string]string     // the Services' UIDs after the orphaning (the one made again: its new UID)
	snapshot []simcontrol.Resource // the cloud once everything was orphaned
	token    string                // metrics reader
}

var errOrphanFailed = errors.New("failed")

// await polls cond every 250ms until it is done, fails (err: a failure, not something to wait
// out) or timeout passes (then the last pending says what was missing).
func (o *orphanRun) await(timeout time.Duration, cond func() (done bool, pending string, err error)) (time.Duration, error) {
	start := time.Now()
	for {
		done, pending, err := cond()
		switch {
		case err != nil:
			return time.Since(start), fmt.Errorf("%w: %v", errOrphanFailed, err)
		case done:
			return time.Since(start), nil
		case time.Since(start) > timeout:
			return time.Since(start), fmt.Errorf("not after %v: %s", timeout, pending)
		}
		select {
		case <-o.h.ctx.Done():
			return time.Since(start), o.h.ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// orphan creates the Services, churns them with SIGKILLs, and orphans the plan's load balancers
// while the last ccm is SIGKILLed.
func (o *orphanRun) orphan() (result, bool) {
	h, ns, p := o.h, o.ns, o.plan
	fmt.Printf("    orphans: seed %d, %d Services, %d port changes, %d+1 SIGKILLs; orphaned: deleted %v, made again %v, ClusterIP %v\n",
		p.Seed, len(p.Services), len(p.Churn.Ops), len(p.Churn.Kills), p.Deleted, p.Recreated, p.ClusterIP)
	if err := h.ensureNamespace(ns); err != nil {
		return fail("namespace: %v", err), false
	}
	if _, err := h.startCCM(); err != nil {
		return fail("starting the ccm: %v", err), false
	}
	if _, err := h.waitFor(90*time.Second, h.nodesInitialised); err != nil {
		return fail("Nodes not initialised: %v", err), false
	}
	o.j = &journal{start: time.Now(), firstCCM: len(h.all) - 1}
	for _, s := range p.Services {
		if _, err := h.env.Client.CoreV1().Services(ns).Create(h.ctx, testenv.LoadBalancerService(ns, s, 80), createOpts); err != nil {
			return fail("creating Service %s: %v", s, err), false
		}
		o.j.opDone(-1, churnOp{Kind: opCreate, Service: s}) // before the plan's operations 0…
	}
	if took, err := o.await(3*time.Minute, o.allAddressed); err != nil {
		return fail("the Services got no load balancers: %v", err), false
	} else {
		o.figs["first addresses after"] = took.Round(100 * time.Millisecond).String()
	}
	if opErr, killErr := h.runPlan(ns, p.Churn, o.j); opErr != nil || killErr != nil {
		return fail("churn: %v %v", opErr, killErr), false
	}
	// The live Services must be done with the churn before the last SIGKILL: the checks below
	// count every delete the cloud serves as the collector's.
	settled, err := o.settle()
	if err != nil {
		return fail("not settled after the churn: %v", err), false
	}
	o.figs["settled after churn"] = settled.Round(100 * time.Millisecond).String()

	// The orphans-to-be change port, and the ccm is SIGKILLed while it may be updating them.
	for i, s := range p.orphaned() {
		port := int32(2000 + i)
		if err := changePort(h, ns, s, port); err != nil {
			return fail("port change of %s: %v", s, err), false
		}
		o.j.opDone(len(p.Churn.Ops)+i, churnOp{Kind: opUpdate, Service: s, Port: port})
	}
	time.Sleep(p.KillDelay)
	victim := h.running[len(h.running)-1]
	victim.Kill()
	o.j.killed(len(p.Churn.Kills), churnKill{AfterOp: len(p.Churn.Ops) + len(p.orphaned()) - 1, Delay: p.KillDelay}, victim.Name)

	svcs := h.env.Client.CoreV1().Services(ns)
	for i, s := range append(append([]string(nil), p.Deleted...), p.Recreated...) {
		deleteFirst := i%2 == 0 && i < len(p.Deleted)
		if deleteFirst {
			if err := svcs.Delete(h.ctx, s, metav1.DeleteOptions{}); err != nil {
				return fail("deleting %s: %v", s, err), false
			}
		}
		if err := o.dropFinalizer(s, nil); err != nil {
			return fail("removing the finalizer of %s: %v", s, err), false
		}
		if !deleteFirst {
			if err := svcs.Delete(h.ctx, s, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fail("deleting %s: %v", s, err), false
			}
		}
	}
	for _, s := range p.ClusterIP {
		if err := o.dropFinalizer(s, func(svc *v1.Service) { svc.Spec.Type = v1.ServiceTypeClusterIP }); err != nil {
			return fail("making %s a ClusterIP Service without its finalizer: %v", s, err), false
		}
	}
	if _, err := o.await(30*time.Second, func() (bool, string, error) {
		for _, s := range append(append([]string(nil), p.Deleted...), p.Recreated...) {
			if _, err := svcs.Get(h.ctx, s, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, s + " still exists", err
			}
		}
		return true, "", nil
	}); err != nil {
		return fail("the deleted Services are not gone: %v", err), false
	}
	old := map[string]string{}
	for _, s := range p.Recreated {
		if u, ok := o.uids[s]; ok {
			old[s] = u
		}
		if _, err := svcs.Create(h.ctx, testenv.LoadBalancerService(ns, s, 80), createOpts); err != nil {
			return fail("creating %s again: %v", s, err), false
		}
	}
	if err := o.readUIDs(); err != nil {
		return fail("%v", err), false
	}
	for s, u := range old {
		if o.uids[s] == u {
			return fail("%s made again kept its UID %s", s, u), false
		}
	}
	res, err := h.cloud.Resources(h.ctx)
	if err != nil {
		return fail("reading the cloud: %v", err), false
	}
	o.snapshot = res
	n := orphanLBs(ns, p, res)
	if n != len(p.orphaned()) {
		return fail("the cloud holds %d load balancers of the %d orphaned Services, want one each:\n%s",
			n, len(p.orphaned()), strings.Join(resourceLines(res, ns), "\n")), false
	}
	o.figs["orphaned"] = fmt.Sprintf("%d (%d deleted, %d made again, %d ClusterIP), %d resources at the cloud",
		len(p.orphaned()), len(p.Deleted), len(p.Recreated), len(p.ClusterIP), countOf(res, ns, p.orphaned()))
	return result{}, true
}

func resourceLines(res []simcontrol.Resource, ns string) []string {
	var out []string
	for _, r := range res {
		if strings.HasPrefix(r.Service, ns+"/") {
			out = append(out, "  "+describeResource(r))
		}
	}
	return out
}

func countOf(res []simcontrol.Resource, ns string, services []string) int {
	n := 0
	for _, r := range res {
		for _, s := range services {
			if r.Service == ns+"/"+s {
				n++
			}
		}
	}
	return n
}

// readUIDs records the UID of every Service of the plan that exists.
func (o *orphanRun) readUIDs() error {
	list, err := o.h.env.Client.CoreV1().Services(o.ns).List(o.h.ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	o.uids = map[string]string{}
	for _, s := range list.Items {
		o.uids[s.Name] = string(s.UID)
	}
	return nil
}

// dropFinalizer removes every finalizer of Service s (with change applied too), as an operator
// does by hand.
func (o *orphanRun) dropFinalizer(s string, change func(*v1.Service)) error {
	svcs := o.h.env.Client.CoreV1().Services(o.ns)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := svcs.Get(o.h.ctx, s, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if o.uids == nil {
			o.uids = map[string]string{}
		}
		o.uids[s] = string(svc.UID)
		svc.Finalizers = nil
		if change != nil {
			change(svc)
		}
		_, err = svcs.Update(o.h.ctx, svc, metav1.UpdateOptions{})
		return err
	})
}

// allAddressed: every LoadBalancer Service of ns has an address.
func (o *orphanRun) allAddressed() (bool, string, error) {
	pending, _, err := o.h.withoutIP(o.ns)
	if err != nil {
		return false, "", err
	}
	return len(pending) == 0, fmt.Sprintf("without an address: %v", pending), nil
}

// settle waits until the newest ccm leads, every Service has an address and the cloud served no
// write for 2s (the dummy: its records unchanged for 2s).
func (o *orphanRun) settle() (time.Duration, error) {
	h := o.h
	newest := h.running[len(h.running)-1]
	last, since := "", time.Now()
	return o.await(2*time.Minute, func() (bool, string, error) {
		if newest.Exited() {
			return false, "", fmt.Errorf("%s exited:\n%s", newest.Name, newest.Tail(10))
		}
		if !strings.Contains(newest.Log(), acquired) {
			return false, newest.Name + " does not lead yet", nil
		}
		if ok, pending, err := o.allAddressed(); !ok || err != nil {
			return false, pending, err
		}
		state, err := o.cloudState()
		if err != nil {
			return false, "", err
		}
		if state != last {
			last, since = state, time.Now()
		}
		return time.Since(since) >= 2*time.Second, "the cloud is still being written to", nil
	})
}

// cloudState changes whenever the cloud is written to: the simulator's write counter, or the
// dummy's record ConfigMaps.
func (o *orphanRun) cloudState() (string, error) {
	if d, ok := o.h.cloud.(*dummyCloud); ok {
		return d.recordsVersion(o.h.ctx)
	}
	c, err := o.h.cloud.Calls(o.h.ctx)
	if err != nil {
		return "", fmt.Errorf("reading the cloud's calls: %w", err)
	}
	return fmt.Sprint(c.Writes), nil
}

// dryRun runs `ccm gc --dry-run` while no ccm runs: it lists every orphan as one and changes
// nothing at the cloud. Its calls are the figure for one scan (with the process's own login).
func (o *orphanRun) dryRun() (result, bool) {
	h := o.h
	before, err := h.cloud.Calls(h.ctx)
	if err != nil {
		return fail("reading the cloud's calls: %v", err), false
	}
	ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, h.binary, "gc", "--cloud-provider="+h.provider, "--cloud-config="+h.cloud.CloudConfig(),
		"--cluster-name="+testCluster, "--kubeconfig="+h.env.KubeconfigPath, "--dry-run").CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return fail("ccm gc --dry-run: %v\n%s", err, out), false
	}
	g, err := parseGC(string(out))
	if err != nil {
		return fail("ccm gc --dry-run printed something else (%v):\n%s", err, out), false
	}
	after, err := h.cloud.Calls(h.ctx)
	if err != nil {
		return fail("reading the cloud's calls: %v", err), false
	}
	res, err := h.cloud.Resources(h.ctx)
	if err != nil {
		return fail("reading the cloud: %v", err), false
	}
	delta := callDelta(before, after)
	var problems []string
	if !g.DryRun || g.Orphaned != len(o.plan.orphaned()) {
		problems = append(problems, fmt.Sprintf("summary: %d orphaned (dry run %v), want %d", g.Orphaned, g.DryRun, len(o.plan.orphaned())))
	}
	for _, s := range o.plan.orphaned() {
		if v := g.Verdicts[o.ns+"/"+s]; len(v) != 1 || v[0] != "orphan: would be deleted" {
			problems = append(problems, fmt.Sprintf("%s/%s: %v", o.ns, s, v))
		}
	}
	for _, s := range o.plan.Live {
		if v := g.Verdicts[o.ns+"/"+s]; len(v) != 1 || !strings.HasPrefix(v[0], "kept") {
			problems = append(problems, fmt.Sprintf("%s/%s (live): %v", o.ns, s, v))
		}
	}
	if d := sumOps(delta, nil, isDeleteOp); d > 0 {
		problems = append(problems, fmt.Sprintf("the cloud served %d delete calls: %s", d, formatOps(delta, isDeleteOp, 10)))
	}
	if m := missing(o.snapshot, res); len(m) > 0 {
		problems = append(problems, "gone from the cloud: "+strings.Join(m, "; "))
	}
	if len(problems) > 0 {
		return fail("ccm gc --dry-run: %s\n%s", strings.Join(problems, "; "), out), false
	}
	o.figs["gc --dry-run"] = fmt.Sprintf("%d of %d load balancers orphaned, 0 deleted at the cloud, %v", g.Orphaned, g.Total, took.Round(100*time.Millisecond))
	if _, ok := lbOps[h.provider]; ok {
		o.figs["scan calls (gc --dry-run, login included)"] = fmt.Sprintf("%d: %s", sumOps(delta, nil, nil), formatOps(delta, nil, 6))
	}
	return result{}, true
}

// metric reads series from c's /metrics; found is false while the series is absent (no round
// done yet), and an unreachable endpoint is waiting too (the ccm is starting).
func (o *orphanRun) metric(c *testenv.CCM, series string) (float64, bool, string, error) {
	if c.Exited() {
		return 0, false, "", fmt.Errorf("%s exited:\n%s", c.Name, c.Tail(10))
	}
	if o.token == "" {
		tok, err := o.h.env.MetricsReaderToken(o.h.ctx)
		if err != nil {
			return 0, false, "", fmt.Errorf("metrics reader token: %w", err)
		}
		o.token = tok
	}
	code, body, err := c.Get("/metrics", o.token)
	if err != nil || code != 200 {
		return 0, false, fmt.Sprintf("/metrics of %s not served yet (%d, %v)", c.Name, code, err), nil
	}
	v, found, err := metricSample(body, series)
	return v, found, "", err
}

// skipped is the ccm's first "round skipped" line: its scan failed, which is a failure here
// (nothing injects faults), not a round that found nothing.
func skipped(c *testenv.CCM) error {
	for _, l := range strings.Split(c.Log(), "\n") {
		if strings.Contains(l, `"Orphan collection round skipped"`) {
			return fmt.Errorf("%s: an orphan scan failed: %s", c.Name, shorten(l, 400))
		}
	}
	return nil
}

const (
	gaugeSeries   = "ccm_orphaned_load_balancers{"
	deletedSeries = "ccm_orphaned_load_balancers_deleted_total{"
)

// reportOnly runs a ccm with --orphan-grace-period=0: every orphan is reported (gauge, log line,
// a Warning Event on the Service of that name where one exists) and, over several more rounds,
// nothing is deleted at the cloud.
func (o *orphanRun) reportOnly() (result, bool) {
	h, p := o.h, o.plan
	before, err := h.cloud.Calls(h.ctx)
	if err != nil {
		return fail("reading the cloud's calls: %v", err), false
	}
	watch, err := o.watchDummy(p.Services)
	if err != nil {
		return fail("%v", err), false
	}
	c, err := h.startCCM("--orphan-collection-period="+orphanPeriod.String(), "--orphan-grace-period=0")
	if err != nil {
		return fail("starting the ccm: %v", err), false
	}
	start := time.Now()
	took, err := o.await(90*time.Second, func() (bool, string, error) {
		if err := skipped(c); err != nil {
			return false, "", err
		}
		if _, err := o.nothingDeleted(before); err != nil {
			return false, "", err
		}
		v, found, pending, err := o.metric(c, gaugeSeries)
		if err != nil || pending != "" {
			return false, pending, err
		}
		if !found {
			return false, "no orphan round completed yet (gauge absent)", nil
		}
		if int(v) != len(p.orphaned()) {
			return false, fmt.Sprintf("gauge %v, want %d", v, len(p.orphaned())), nil
		}
		missingLog := o.unreported(c)
		if len(missingLog) > 0 {
			return false, fmt.Sprintf("no log line for %v", missingLog), nil
		}
		ev, err := o.orphanEvents()
		if err != nil {
			return false, "", err
		}
		if len(ev) > 0 {
			return false, "no OrphanedLoadBalancer Warning for " + strings.Join(ev, ", "), nil
		}
		return true, "", nil
	})
	if err != nil {
		return fail("the orphans were not reported with grace 0: %v", err), false
	}
	o.figs["reported after start (grace 0)"] = took.Round(100 * time.Millisecond).String()
	// Several more rounds: still nothing deleted.
	time.Sleep(3 * orphanPeriod)
	if err := skipped(c); err != nil {
		return fail("%v", err), false
	}
	d, found, pending, err := o.metric(c, deletedSeries)
	switch {
	case err != nil || pending != "":
		return fail("reading the deleted counter: %v %s", err, pending), false
	case found && d != 0:
		return fail("a ccm with --orphan-grace-period=0 counts %v deleted", d), false
	}
	delta, err := o.nothingDeleted(before)
	if err != nil {
		return fail("%v", err), false
	}
	if gone, err := watch(); err != nil {
		return fail("%v", err), false
	} else if len(gone) > 0 {
		return fail("with grace 0 these records vanished from the dummy's ConfigMaps: %v", gone), false
	}
	if ops, ok := lbOps[h.provider]; ok {
		o.figs["grace 0"] = fmt.Sprintf("%d reported (gauge, log, Events), 0 delete calls at the cloud in %v, %d load balancers created",
			len(p.orphaned()), time.Since(start).Round(100*time.Millisecond), sumOps(delta, ops.create, nil))
	} else {
		o.figs["grace 0"] = fmt.Sprintf("%d reported (gauge, log, Events), 0 records vanished in %v", len(p.orphaned()), time.Since(start).Round(100*time.Millisecond))
	}
	c.Stop(10 * time.Second)
	return result{}, true
}

// nothingDeleted fails when the cloud served a delete call since before or no longer holds
// something it held once everything was orphaned; it returns the calls since before.
func (o *orphanRun) nothingDeleted(before simcontrol.Calls) (map[string]int, error) {
	after, err := o.h.cloud.Calls(o.h.ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cloud's calls: %w", err)
	}
	res, err := o.h.cloud.Resources(o.h.ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cloud: %w", err)
	}
	delta := callDelta(before, after)
	if n := sumOps(delta, nil, isDeleteOp); n > 0 {
		return nil, fmt.Errorf("with grace 0 the cloud served %d delete calls: %s", n, formatOps(delta, isDeleteOp, 10))
	}
	if m := missing(o.snapshot, res); len(m) > 0 {
		return nil, fmt.Errorf("with grace 0 these went from the cloud: %s", strings.Join(m, "; "))
	}
	return delta, nil
}

// unreported are the orphaned Services the ccm's log names in no "Orphaned load balancer found".
func (o *orphanRun) unreported(c *testenv.CCM) []string {
	log := c.Log()
	var out []string
	for _, s := range o.plan.orphaned() {
		found := false
		for _, l := range strings.Split(log, "\n") {
			if strings.Contains(l, `"Orphaned load balancer found"`) && strings.Contains(l, `service="`+o.ns+"/"+s+`"`) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out
}

// orphanEvents are the Services (made again, ClusterIP) without their OrphanedLoadBalancer
// Warning yet, on the Service as it is now (its UID).
func (o *orphanRun) orphanEvents() ([]string, error) {
	evs, err := o.h.env.Client.CoreV1().Events(o.ns).List(o.h.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Events: %w", err)
	}
	var out []string
	for _, s := range append(append([]string(nil), o.plan.Recreated...), o.plan.ClusterIP...) {
		found := false
		for _, e := range evs.Items {
			if e.Reason == "OrphanedLoadBalancer" && e.Type == v1.EventTypeWarning && e.InvolvedObject.Name == s &&
				string(e.InvolvedObject.UID) == o.uids[s] && strings.Contains(e.Message, "not deleted") {
				found = true
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	return out, nil
}

// watchDummy follows the dummy's records from now (nothing for a simulator) and returns a
// function that ends it and lists the records of services that vanished in between.
func (o *orphanRun) watchDummy(services []string) (func() ([]string, error), error) {
	d, ok := o.h.cloud.(*dummyCloud)
	if !ok {
		return func() ([]string, error) { return nil, nil }, nil
	}
	stop, err := d.watchRecords(o.h.ctx)
	if err != nil {
		return nil, fmt.Errorf("watching the dummy's records: %w", err)
	}
	return func() ([]string, error) {
		vanished, err := stop()
		if err != nil {
			return nil, err
		}
		var out []string
		for _, s := range services {
			if n := vanished[o.ns+"/"+s]; n > 0 {
				out = append(out, fmt.Sprintf("%s/%s (%d times)", o.ns, s, n))
			}
		}
		return out, nil
	}, nil
}

// collect runs a ccm with a short grace: the orphans are deleted once it has passed, nothing
// else is, and the Service made again gets its own load balancer.
func (o *orphanRun) collect() (result, bool) {
	h, p, ns := o.h, o.plan, o.ns
	before, err := h.cloud.Calls(h.ctx)
	if err != nil {
		return fail("reading the cloud's calls: %v", err), false
	}
	watch, err := o.watchDummy(p.Live)
	if err != nil {
		return fail("%v", err), false
	}
	c, err := h.startCCM("--orphan-collection-period="+orphanPeriod.String(), "--orphan-grace-period="+orphanGrace.String())
	if err != nil {
		return fail("starting the ccm: %v", err), false
	}
	start := time.Now()
	live := append(append([]string(nil), p.Live...), p.Recreated...)
	sort.Strings(live)
	var problems []problem
	var lastRes []simcontrol.Resource
	var deletedAt, cleanAt time.Duration
	took, err := o.await(3*time.Minute, func() (bool, string, error) {
		if err := skipped(c); err != nil {
			return false, "", err
		}
		pr, _, err := h.converged(ns, live)
		if err != nil {
			return false, "", fmt.Errorf("reading the cluster and the cloud: %w", err)
		}
		problems = pr
		res, err := h.cloud.Resources(h.ctx)
		if err != nil {
			return false, "", fmt.Errorf("reading the cloud: %w", err)
		}
		lastRes = res
		if deletedAt == 0 && orphanLBs(ns, orphanPlan{Deleted: p.Deleted, ClusterIP: p.ClusterIP}, res) == 0 {
			deletedAt = time.Since(start)
		}
		if cp := collectedProblems(ns, p, o.snapshot, res); len(cp) > 0 || len(pr) > 0 {
			cleanAt = 0
			return false, fmt.Sprintf("%d cluster problems, %v", len(pr), cp), nil
		}
		if cleanAt == 0 {
			cleanAt = time.Since(start)
		}
		// The cloud is collected; the ccm's figures must say so within a few rounds.
		late := func(what string) (bool, string, error) {
			if time.Since(start)-cleanAt > 5*orphanPeriod {
				return false, "", fmt.Errorf("the cloud is collected but, %v later, the ccm's %s", (time.Since(start) - cleanAt).Round(100*time.Millisecond), what)
			}
			return false, what, nil
		}
		g, found, pending, err := o.metric(c, gaugeSeries)
		if err != nil || pending != "" {
			return false, pending, err
		}
		if !found || g != 0 {
			return late(fmt.Sprintf("gauge is %v (present %v), want 0", g, found))
		}
		d, found, pending, err := o.metric(c, deletedSeries)
		if err != nil || pending != "" {
			return false, pending, err
		}
		if !found || int(d) != len(p.orphaned()) {
			return late(fmt.Sprintf("deleted counter is %v (present %v), want %d", d, found, len(p.orphaned())))
		}
		return true, "", nil
	})
	o.figs["deleted after start"] = deletedAt.Round(100 * time.Millisecond).String()
	if err != nil {
		var b strings.Builder
		fmt.Fprintf(&b, "the orphans were not collected with grace %v: %v\n", orphanGrace, err)
		if lastRes != nil {
			for _, cp := range collectedProblems(ns, p, o.snapshot, lastRes) {
				fmt.Fprintf(&b, "  - %s\n", cp)
			}
		}
		b.WriteString(h.leakReport(ns, live, problems, o.j))
		return fail("%s", b.String()), false
	}
	o.figs["collected after start"] = took.Round(100 * time.Millisecond).String()
	if deletedAt < orphanGrace {
		return fail("orphans deleted %v after the ccm started, before the %v grace", deletedAt, orphanGrace), false
	}
	after, err := h.cloud.Calls(h.ctx)
	if err != nil {
		return fail("reading the cloud's calls: %v", err), false
	}
	delta := callDelta(before, after)
	want := orphanLBs(ns, p, o.snapshot)
	if ops, ok := lbOps[h.provider]; ok {
		// Exact counts: a live load balancer deleted would need one more delete, and (it is
		// back, converged says so) one more create than the Service made again needs.
		deletes, creates := sumOps(delta, ops.delete, nil), sumOps(delta, ops.create, nil)
		o.figs["load balancer deletes / creates at the cloud"] = fmt.Sprintf("%d / %d (orphans %d, made again %d)", deletes, creates, want, len(p.Recreated))
		if deletes != want || creates != len(p.Recreated) {
			return fail("the cloud served %d load balancer deletes and %d creates, want %d (the orphans) and %d (the Services made again): %s",
				deletes, creates, want, len(p.Recreated), formatOps(delta, func(op string) bool { return contains(ops.delete, op) || contains(ops.create, op) }, 10)), false
		}
		n := sumOps(delta, nil, isDeleteOp)
		o.figs["delete calls per orphan"] = fmt.Sprintf("%.1f (%s)", float64(n)/float64(want), formatOps(delta, isDeleteOp, 8))
		o.figs["calls while collecting"] = fmt.Sprintf("%d in %v (ccm start, Service syncs and rounds included)", sumOps(delta, nil, nil), took.Round(100*time.Millisecond))
	} else {
		gone, err := watch()
		if err != nil {
			return fail("%v", err), false
		}
		if len(gone) > 0 {
			return fail("live Services' records vanished from the dummy's ConfigMaps: %v", gone), false
		}
		uids, err := h.cloud.(*dummyCloud).recordUIDs(h.ctx)
		if err != nil {
			return fail("reading the dummy's records: %v", err), false
		}
		for _, s := range p.Recreated {
			if got := uids[ns+"/"+s]; got != o.uids[s] {
				return fail("the record of %s/%s names UID %q, the Service made again has %s", ns, s, got, o.uids[s]), false
			}
		}
		o.figs["load balancer deletes / creates at the cloud"] = fmt.Sprintf("%d records gone, the one made again names its new UID; 0 live records vanished", want)
	}
	o.figs["orphans found / deleted (gauge, counter)"] = fmt.Sprintf("%d / %d", len(p.orphaned()), len(p.orphaned()))
	return result{}, true
}
