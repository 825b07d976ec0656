package openstack

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/loadbalancers"
	"github.com/gophercloud/gophercloud/v2/openstack/loadbalancer/v2/pools"
	api "k8s.io/cloud-provider/api"
)

// Octavia can leave objects in a PENDING_* state for good: a load balancer whose worker died
// mid-flow, or the children of a fully populated create that Octavia 11 without its jobboard
// never provisions (the load balancer goes ACTIVE, its listeners, pools, members and monitors
// stay PENDING_CREATE, and every write to them is refused 409 "... is immutable"). Nothing
// ccm writes can move them. So a pending object is looked at again with a growing delay, not
// every pending-retry for ever, and once it has been pending for stuckAfter each look says so
// in a Warning naming the object and its state: an operator has to act (Octavia's
// housekeeping, or deleting the load balancer, which ccm then creates again).

// reasonStuck is the Warning for an object pending for longer than stuckAfter.
const reasonStuck = "LoadBalancerStuck"

// maxPendingDelay caps the delay between two looks at a stuck load balancer.
const maxPendingDelay = 5 * time.Minute

// defaultStuckAfter is how long an object may stay pending before it is reported: longer than
// an amphora's boot (Octavia's own build timeout is a few minutes).
const defaultStuckAfter = 5 * time.Minute

// pendingLooks remembers, per load balancer ID, since when it (or a child of the Service) has
// been pending and how often it was looked at since.
type pendingLooks struct {
	mu    sync.Mutex
	since map[string]time.Time
	looks map[string]int
}

// look records one more look at pending lbID and returns how long it has been pending and the
// delay before the next look: base while younger than stuckAfter, then doubling up to
// maxPendingDelay.
func (p *pendingLooks) look(lbID string, now time.Time, base, stuckAfter time.Duration) (pending, next time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.since == nil {
		p.since, p.looks = map[string]time.Time{}, map[string]int{}
	}
	t, ok := p.since[lbID]
	if !ok {
		t = now
		p.since[lbID] = t
	}
	pending = now.Sub(t)
	if pending < stuckAfter {
		return pending, base
	}
	n := p.looks[lbID]
	p.looks[lbID] = n + 1
	return pending, backoff(base, n)
}

// settled forgets lbID: it is no longer pending.
func (p *pendingLooks) settled(lbID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.since, lbID)
	delete(p.looks, lbID)
}

// backoff is base doubled n times, at most maxPendingDelay (and never below base). Pure.
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 0; i < n && d < maxPendingDelay; i++ {
		d *= 2
	}
	return max(base, min(d, maxPendingDelay))
}

// stuckChild is an object Octavia holds in a state no write can change.
type stuckChild struct {
	Kind, Name, ID, Status string
}

func (s stuckChild) String() string {
	return fmt.Sprintf("%s %s (%s) is %s", s.Kind, s.Name, s.ID, s.Status)
}

func pendingStatus(s string) bool { return strings.HasPrefix(s, "PENDING_") }

// stuckChildren are the Service's listeners (kept, updated in place or deleted by plan) and
// their pools that are PENDING_* on a load balancer seen ACTIVE. Only the Service's own
// objects are in the plan's lists (planListeners). Pure.
func stuckChildren(plan listenerPlan, allPools []pools.Pool) []stuckChild {
	var out []stuckChild
	poolByID := map[string]pools.Pool{}
	for _, p := range allPools {
		poolByID[p.ID] = p
	}
	seen := map[string]bool{}
	add := func(kind, name, id, status string) {
		if pendingStatus(status) && !seen[id] {
			seen[id] = true
			out = append(out, stuckChild{kind, name, id, status})
		}
	}
	var ours []string // listener IDs, in a stable order
	lis := map[string]struct{ name, status, pool string }{}
	note := func(key, id, status, pool string) {
		if _, ok := lis[id]; !ok {
			ours = append(ours, id)
		}
		lis[id] = struct{ name, status, pool string }{key, status, pool}
	}
	for key, h := range plan.Keep {
		note(key, h.ID, h.ProvisioningStatus, h.DefaultPoolID)
	}
	for key, h := range plan.Relabel {
		note(key, h.ID, h.ProvisioningStatus, h.DefaultPoolID)
	}
	for _, d := range plan.Delete {
		note(listenerKey(d.Listener), d.Listener.ID, d.Listener.ProvisioningStatus, d.Listener.DefaultPoolID)
	}
	slices.Sort(ours)
	for _, id := range ours {
		h := lis[id]
		add("listener", h.name, id, h.status)
		if p, ok := poolByID[h.pool]; ok {
			add("pool", p.Name, p.ID, p.ProvisioningStatus)
		}
	}
	for _, p := range plan.DeletePools {
		add("pool", p.Name, p.ID, p.ProvisioningStatus)
	}
	return out
}

// stuckMembers are the kept listener's members and monitor that are PENDING_*. Pure.
func stuckMembers(key string, obs poolState) []stuckChild {
	var out []stuckChild
	for _, m := range obs.Pending {
		out = append(out, stuckChild{m.Kind, key + " " + m.Name, m.ID, m.Status})
	}
	return out
}

// checkStuck returns nil when nothing is stuck (lbID is then settled). Otherwise it looks at
// the load balancer once more: busy (another writer's update in flight) is an ordinary
// retry; ACTIVE with pending children is a RetryError with a growing delay, and once the
// children have been pending for stuckAfter the sync's report says which (a Warning).
func (l *loadBalancers) checkStuck(ctx context.Context, cl *clients, lbID string, children []stuckChild, rep *syncReport) error {
	if len(children) == 0 {
		l.pendingLooks.settled(lbID)
		return nil
	}
	lb, err := loadbalancers.Get(ctx, cl.lb, lbID).Extract()
	if err != nil {
		return fmt.Errorf("getting load balancer %s: %w", lbID, err)
	}
	if lb.ProvisioningStatus != "ACTIVE" {
		return l.retry(fmt.Sprintf("load balancer %s is %s", lbID, lb.ProvisioningStatus))
	}
	var what []string
	for _, c := range children {
		what = append(what, c.String())
	}
	return l.pending(lbID, fmt.Sprintf("load balancer %s is ACTIVE but %s: Octavia refuses every change to them", lbID, strings.Join(what, ", ")), rep)
}

// pending is the RetryError for a load balancer (or its children) still pending, with the
// growing delay of pendingLooks; once pending for stuckAfter, msg goes into rep.stuck too.
func (l *loadBalancers) pending(lbID, msg string, rep *syncReport) error {
	age, next := l.pendingLooks.look(lbID, time.Now(), l.c.cfg.LoadBalancer.PendingRetry.Duration, l.stuckAfter)
	if age >= l.stuckAfter {
		unit := time.Second
		if age < time.Second {
			unit = 10 * time.Millisecond
		}
		msg = fmt.Sprintf("%s (pending for %v)", msg, age.Round(unit))
		rep.stuck = append(rep.stuck, msg)
	}
	return api.NewRetryError(fmt.Sprintf("%s; checking again in %v", msg, next), next)
}
