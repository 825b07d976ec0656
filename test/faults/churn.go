package main

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ccm-project/ccm/common/simcontrol"
	"github.com/ccm-project/ccm/common/testenv"
)

// churn: Services are created, updated and deleted while the ccm is SIGKILLed at random points
// and restarted. Afterwards the cloud holds exactly one load balancer per existing LoadBalancer
// Service (none leaked, none doubled), no other resource of a Service that is gone, and no
// Service is stuck being deleted.
//
// What happens is decided up front by planChurn from the seed: the operations (which Service,
// which port, the pause before each) and the SIGKILLs (after which operation, how long after
// it, how long the ccm stays down). The same seed and sizes give the same plan; `--seed`
// replays one. Only timing is the machine's: how far the ccm got with an operation when the
// SIGKILL lands varies with load.
func churn(h *harness) result {
	const ns = "churn"
	plan := planChurn(h.seed, h.sz.churnServices, h.sz.kills)
	fmt.Printf("    churn: seed %d, plan %s (%d operations, %d SIGKILLs); replay: %s\n",
		plan.Seed, plan.Fingerprint(), len(plan.Ops), len(plan.Kills), h.replay)
	figs := map[string]string{"seed": fmt.Sprint(plan.Seed), "plan": plan.Fingerprint(), "replay": h.replay}
	if err := h.ensureNamespace(ns); err != nil {
		return withFigures(fail("namespace: %v", err), figs)
	}
	if _, err := h.startCCM(); err != nil {
		return withFigures(fail("starting the ccm: %v", err), figs)
	}
	if _, err := h.waitFor(90*time.Second, h.nodesInitialised); err != nil {
		return withFigures(fail("Nodes not initialised: %v", err), figs)
	}
	j := &journal{start: time.Now(), firstCCM: len(h.all) - 1}

	opErr, killErr := h.runPlan(ns, plan, j)
	created, updated, deleted := plan.counts()
	figs["ops"] = fmt.Sprintf("%d created, %d updated, %d deleted", created, updated, deleted)
	figs["SIGKILLs"] = fmt.Sprint(len(j.kills))
	switch {
	case opErr != nil:
		return withFigures(fail("%v (seed %d; replay: %s)", opErr, plan.Seed, h.replay), figs)
	case killErr != nil:
		return withFigures(fail("%v (seed %d; replay: %s)", killErr, plan.Seed, h.replay), figs)
	}
	live := plan.live()
	settled := time.Now()
	var problems []problem
	_, err := h.waitFor(5*time.Minute, func() (bool, error) {
		p, _, err := h.converged(ns, live)
		problems = p
		return err == nil && len(p) == 0, err
	})
	// Informative only: SIGKILLs interrupt reconciles, so some failures are expected here.
	if w, werr := h.lbWarnings(ns); werr == nil {
		figs["failed syncs / planned re-checks"] = fmt.Sprintf("%d / %d", w.Failed, w.Rechecks)
	}
	if err != nil {
		return withFigures(fail("not converged %v after the last operation (%v), seed %d; replay: %s\n%s",
			time.Since(settled).Round(time.Second), err, plan.Seed, h.replay, h.leakReport(ns, live, problems, j)), figs)
	}
	figs["converged after last op"] = time.Since(settled).Round(100 * time.Millisecond).String()
	figs["leaked / doubled"] = "0 / 0"
	return withFigures(pass(fmt.Sprintf("%s with %d SIGKILLs (seed %d): converged, 0 leaked, 0 stuck", figs["ops"], len(j.kills), plan.Seed), nil), figs)
}

// runPlan does plan's operations on the Services of ns in order, with its SIGKILLs beside them
// (each once its operation is done), and returns the first failed operation and the kills' error.
func (h *harness) runPlan(ns string, plan churnPlan, j *journal) (opErr, killErr error) {
	svcs := h.env.Client.CoreV1().Services(ns)
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- h.runKills(plan, j, stop) }()
	for i, op := range plan.Ops {
		time.Sleep(op.Pause)
		var err error
		switch op.Kind {
		case opCreate:
			_, err = svcs.Create(h.ctx, testenv.LoadBalancerService(ns, op.Service, 80), createOpts)
		case opUpdate:
			err = changePort(h, ns, op.Service, op.Port)
		case opDelete:
			err = svcs.Delete(h.ctx, op.Service, metav1.DeleteOptions{})
		}
		if err != nil {
			opErr = fmt.Errorf("operation %d (%s %s): %w", i, op.Kind, op.Service, err)
			break
		}
		j.opDone(i, op)
	}
	close(stop)
	return opErr, <-done
}

// runKills SIGKILLs the newest ccm at each of the plan's kill points and starts another after
// the planned pause. It stops early when stop closes (the operations failed).
func (h *harness) runKills(plan churnPlan, j *journal, stop <-chan struct{}) error {
	for i, k := range plan.Kills {
		for !j.doneWith(k.AfterOp) {
			select {
			case <-stop:
				if !j.doneWith(k.AfterOp) {
					return nil
				}
			case <-time.After(10 * time.Millisecond):
			}
		}
		time.Sleep(k.Delay)
		victim := h.running[len(h.running)-1]
		victim.Kill()
		j.killed(i, k, victim.Name)
		time.Sleep(k.Down)
		if _, err := h.startCCM(); err != nil {
			return fmt.Errorf("restart after SIGKILL %d: %w", i+1, err)
		}
	}
	return nil
}

// Operation kinds.
const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
)

// churnOp is one operation on a Service of namespace churn, after a pause.
type churnOp struct {
	Kind    string
	Service string
	Port    int32 // update: the new port
	Pause   time.Duration
}

// churnKill is a SIGKILL of the running ccm Delay after operation AfterOp (an index into Ops)
// is done; a new ccm starts Down later.
type churnKill struct {
	AfterOp     int
	Delay, Down time.Duration
}

type churnPlan struct {
	Seed  int64
	Ops   []churnOp
	Kills []churnKill
}

// planChurn draws the whole scenario from seed: services Services created over time, updated
// (a port change) and deleted at random among those alive, until all were created and then
// either none is left or a random stop; and kills SIGKILLs (planKills).
func planChurn(seed int64, services, kills int) churnPlan {
	rng := rand.New(rand.NewSource(seed))
	p := churnPlan{Seed: seed}
	var live []string
	created := 0
	for created < services || rng.Intn(4) != 0 {
		op := churnOp{Pause: time.Duration(rng.Intn(300)) * time.Millisecond}
		switch r := rng.Intn(10); {
		case created < services && (r < 5 || len(live) == 0):
			op.Kind, op.Service = opCreate, fmt.Sprintf("c-%d", created)
			live = append(live, op.Service)
			created++
		case len(live) > 0 && r < 8:
			op.Kind, op.Service, op.Port = opUpdate, live[rng.Intn(len(live))], int32(1000+rng.Intn(1000))
		case len(live) > 0:
			i := rng.Intn(len(live))
			op.Kind, op.Service = opDelete, live[i]
			live = append(live[:i], live[i+1:]...)
		default:
			continue
		}
		p.Ops = append(p.Ops, op)
		if created >= services && len(live) == 0 {
			break
		}
	}
	p.Kills = planKills(rng, len(p.Ops), kills)
	return p
}

// planKills draws kills SIGKILLs among ops operations: one at a random operation of each of
// kills equal stretches, a random moment (under 300ms) after it, down for under 2s.
func planKills(rng *rand.Rand, ops, kills int) []churnKill {
	kills = min(kills, ops)
	var out []churnKill
	for i := range kills {
		lo, hi := i*ops/kills, (i+1)*ops/kills
		out = append(out, churnKill{
			AfterOp: lo + rng.Intn(hi-lo),
			Delay:   time.Duration(rng.Int63n(int64(300 * time.Millisecond))),
			Down:    time.Duration(rng.Int63n(int64(2 * time.Second))),
		})
	}
	return out
}

// live are the Services the plan leaves in place, sorted.
func (p churnPlan) live() []string {
	alive := map[string]bool{}
	for _, op := range p.Ops {
		switch op.Kind {
		case opCreate:
			alive[op.Service] = true
		case opDelete:
			delete(alive, op.Service)
		}
	}
	out := make([]string, 0, len(alive))
	for s := range alive {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func (p churnPlan) counts() (created, updated, deleted int) {
	for _, op := range p.Ops {
		switch op.Kind {
		case opCreate:
			created++
		case opUpdate:
			updated++
		case opDelete:
			deleted++
		}
	}
	return created, updated, deleted
}

// Fingerprint is a short hash of the whole plan: two runs with the same one did the same
// operations and SIGKILLs.
func (p churnPlan) Fingerprint() string {
	f := fnv.New32a()
	fmt.Fprintf(f, "%+v", p)
	return fmt.Sprintf("%08x", f.Sum32())
}

// journal records when each operation and SIGKILL happened, for the leak report.
type journal struct {
	start    time.Time
	firstCCM int // index in harness.all of the scenario's first ccm

	mu     sync.Mutex
	ops    []journalOp
	kills  []journalKill
	nextOp int // operations 0..nextOp-1 are done
}

type journalOp struct {
	Index int
	churnOp
	At time.Duration
}

type journalKill struct {
	Index, AfterOp int
	CCM            string
	At             time.Duration
}

func (j *journal) opDone(i int, op churnOp) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ops = append(j.ops, journalOp{Index: i, churnOp: op, At: time.Since(j.start)})
	j.nextOp = i + 1
}

func (j *journal) doneWith(op int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.nextOp > op
}

func (j *journal) killed(i int, k churnKill, ccm string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.kills = append(j.kills, journalKill{Index: i + 1, AfterOp: k.AfterOp, CCM: ccm, At: time.Since(j.start)})
}

// history says what was done to Service name, and which SIGKILLs fell after its last operation.
func (j *journal) history(name string) (ops []string, last time.Duration, killsAfter []journalKill) {
	j.mu.Lock()
	defer j.mu.Unlock()
	last = -1
	for _, op := range j.ops {
		if op.Service != name {
			continue
		}
		what := op.Kind
		if op.Kind == opUpdate {
			what = fmt.Sprintf("port %d", op.Port)
		}
		ops = append(ops, fmt.Sprintf("%s (op %d at %s)", what, op.Index, sec(op.At)))
		last = op.At
	}
	if last < 0 {
		return nil, last, nil
	}
	for _, k := range j.kills {
		if k.At >= last {
			killsAfter = append(killsAfter, k)
		}
	}
	return ops, last, killsAfter
}

func sec(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// problem is one thing still wrong after the churn, and the Service it is about.
type problem struct {
	text, service string
}

// converged says what is still wrong (nothing when empty): Services without load balancers,
// deleted Services still present, and cloud resources that do not match the Services, with
// the leaked resources themselves.
func (h *harness) converged(ns string, live []string) ([]problem, []simcontrol.Resource, error) {
	all, err := h.env.Client.CoreV1().Services("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	var problems []problem
	add := func(svc, format string, args ...any) {
		problems = append(problems, problem{text: fmt.Sprintf(format, args...), service: svc})
	}
	want := map[string]bool{}
	for _, s := range all.Items {
		if s.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		key := s.Namespace + "/" + s.Name
		if s.DeletionTimestamp != nil {
			add(key, "Service %s is still being deleted (finalizers %v)", key, s.Finalizers)
			continue
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			add(key, "Service %s has no address", key)
		}
		want[key] = true
	}
	for _, name := range live {
		if key := ns + "/" + name; !want[key] {
			add(key, "Service %s is missing", key)
		}
	}
	res, err := h.cloud.Resources(h.ctx)
	if err != nil {
		return nil, nil, err
	}
	lbs := map[string]int{}
	var leaks []simcontrol.Resource
	for _, r := range res {
		if r.Kind == "loadbalancer" {
			lbs[r.Service]++
		}
		if !want[r.Service] {
			leaks = append(leaks, r)
		}
	}
	for _, k := range sortedKeys(lbs) {
		if want[k] && lbs[k] > 1 {
			add(k, "doubled: %d load balancers for %s", lbs[k], k)
		}
	}
	for _, k := range sortedKeys(boolKeys(want)) {
		if lbs[k] == 0 {
			add(k, "Service %s has no load balancer in the cloud", k)
		}
	}
	for _, r := range leaks {
		add(r.Service, "leaked: %s", describeResource(r))
	}
	return problems, leaks, nil
}

func describeResource(r simcontrol.Resource) string {
	owner := r.Service
	if owner == "" {
		owner = "(none: no ownership tag or description the simulator could read)"
	}
	return fmt.Sprintf("%s %s, owner by the cloud's ownership tags/description: %s", r.Kind, r.Name, owner)
}

func boolKeys(m map[string]bool) map[string]int {
	out := make(map[string]int, len(m))
	for k := range m {
		out[k] = 1
	}
	return out
}

// leakReport lists every problem left and, for each leaked object's Service (and each Service
// stuck or without a load balancer), what the churn did to it, the SIGKILLs after its last
// operation, the last line each ccm of the scenario logged about it (which step a SIGKILL
// interrupted), and its last Warning Events.
func (h *harness) leakReport(ns string, live []string, problems []problem, j *journal) string {
	// Read once more: the last poll's list may be a moment old.
	if p, _, err := h.converged(ns, live); err == nil {
		problems = p
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) (times are since the churn's start at %s UTC):\n", len(problems), j.start.UTC().Format("15:04:05.000"))
	for _, p := range problems {
		fmt.Fprintf(&b, "  - %s\n", p.text)
	}
	ccms := h.all[j.firstCCM:]
	killedAt := map[string]journalKill{}
	j.mu.Lock()
	for _, k := range j.kills {
		killedAt[k.CCM] = k
	}
	j.mu.Unlock()
	seen := map[string]bool{}
	for _, p := range problems {
		key := p.service
		if key == "" || seen[key] {
			continue
		}
		seen[key] = true
		svcNS, name, _ := strings.Cut(key, "/")
		fmt.Fprintf(&b, "  %s:\n", key)
		if svcNS == ns {
			ops, last, after := j.history(name)
			if len(ops) == 0 {
				b.WriteString("    operations: none by the churn\n")
			} else {
				fmt.Fprintf(&b, "    operations: %s\n", strings.Join(ops, ", "))
				if len(after) == 0 {
					b.WriteString("    no SIGKILL after its last operation\n")
				}
				for _, k := range after {
					names := "its log does not name the Service"
					if c := ccmNamed(ccms, k.CCM); c != nil && len(linesAbout(c.Log(), key, 1)) > 0 {
						names = "its log names the Service"
					}
					fmt.Fprintf(&b, "    SIGKILL #%d of %s at %s, %s after its last operation (planned after op %d; %s)\n",
						k.Index, k.CCM, sec(k.At), (k.At - last).Round(100*time.Millisecond), k.AfterOp, names)
				}
			}
		}
		for _, c := range ccms {
			lines := linesAbout(c.Log(), key, 3)
			if len(lines) == 0 {
				continue
			}
			state := "still running"
			if k, ok := killedAt[c.Name]; ok {
				state = fmt.Sprintf("SIGKILLed (#%d at %s)", k.Index, sec(k.At))
			}
			fmt.Fprintf(&b, "    %s, %s; its last lines about it:\n", c.Name, state)
			for _, l := range lines {
				fmt.Fprintf(&b, "      %s\n", shorten(l, 300))
			}
		}
		for _, w := range h.serviceWarnings(h.ctx, svcNS, name, 3) {
			fmt.Fprintf(&b, "    Warning %s\n", w)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// linesAbout are the last n log lines (oldest first) naming key (namespace/name) as a whole
// word: c-1 is not c-18. Logged HTTP bodies are skipped.
func linesAbout(log, key string, n int) []string {
	var out []string
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		l := lines[i]
		if strings.Contains(l, "Body:") || !containsWord(l, key) {
			continue
		}
		out = append([]string{strings.TrimSpace(l)}, out...)
	}
	return out
}

func ccmNamed(ccms []*testenv.CCM, name string) *testenv.CCM {
	for _, c := range ccms {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func containsWord(s, w string) bool {
	for from := 0; ; {
		i := strings.Index(s[from:], w)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(w)
		if (i == 0 || !nameByte(s[i-1])) && (end == len(s) || !nameByte(s[end])) {
			return true
		}
		from = i + 1
	}
}

func nameByte(c byte) bool {
	return c == '-' || c == '.' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func changePort(h *harness, ns, name string, port int32) error {
	for {
		s, err := h.env.Client.CoreV1().Services(ns).Get(h.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Ports[0].Port = port
		s.Spec.Ports[0].Name = fmt.Sprintf("p%d", port)
		if _, err = h.env.Client.CoreV1().Services(ns).Update(h.ctx, s, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			return err
		}
	}
}
