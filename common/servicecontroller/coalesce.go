package servicecontroller

import (
	"context"
	"sync"
	"time"
)

// Node changes come in bursts: an autoscaler adds forty Nodes within a second, a rolling
// upgrade replaces them a few hundred milliseconds apart. A member pass per change gave each
// load balancer three or four updates per burst, each a cloud write, the first ones with a
// member set already out of date. So a change starts a wait: the pass is queued once no
// further change has come for the quiet period (--node-sync-delay), and at the latest
// maxWaitFactor quiet periods after the burst's first change, so a steady trickle of changes
// still reaches the load balancers. A Service's own sync is not delayed: it reads the
// member set at once (the cache is invalidated by the change itself, not by the pass).

// DefaultNodeSyncDelay is ccm's quiet period for Node changes.
const DefaultNodeSyncDelay = time.Second

// maxWaitFactor bounds a burst's wait: at most this many quiet periods after its first change.
const maxWaitFactor = 10

// passDue is when the member pass of a burst is due: quiet after its last change, and no
// later than maxWaitFactor quiet periods after its first.
func passDue(first, last time.Time, quiet time.Duration) time.Time {
	due := last.Add(quiet)
	if limit := first.Add(maxWaitFactor * quiet); limit.Before(due) {
		return limit
	}
	return due
}

// nodeCoalescer queues one member pass per burst of Node changes.
type nodeCoalescer struct {
	quiet   time.Duration
	fire    func() // queues the pass
	kick    chan struct{}
	mu      sync.Mutex
	first   time.Time // the burst's first change
	last    time.Time // its latest
	pending bool      // a burst is waiting for its pass
}

func newNodeCoalescer(quiet time.Duration, fire func()) *nodeCoalescer {
	return &nodeCoalescer{quiet: quiet, fire: fire, kick: make(chan struct{}, 1)}
}

// changed records a Node change. Without a quiet period the pass is queued at once.
func (k *nodeCoalescer) changed() {
	if k.quiet <= 0 {
		k.fire()
		return
	}
	now := time.Now()
	k.mu.Lock()
	if !k.pending {
		k.first, k.pending = now, true
	}
	k.last = now
	k.mu.Unlock()
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// run queues each burst's pass when it is due, until ctx is done.
func (k *nodeCoalescer) run(ctx context.Context) {
	if k.quiet <= 0 {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.kick:
		}
		for wait := k.untilDue(); wait > 0; wait = k.untilDue() {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			case <-k.kick: // a later change: compute the time again
				t.Stop()
			}
		}
	}
}

// untilDue is how long the waiting burst still waits; 0 when it is due (it is then no longer
// waiting, and its pass is queued) or when none waits.
func (k *nodeCoalescer) untilDue() time.Duration {
	k.mu.Lock()
	if !k.pending {
		k.mu.Unlock()
		return 0
	}
	wait := time.Until(passDue(k.first, k.last, k.quiet))
	if wait > 0 {
		k.mu.Unlock()
		return wait
	}
	k.pending = false
	k.mu.Unlock()
	k.fire()
	return 0
}
