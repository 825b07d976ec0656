package servicecontroller

import (
	"context"
	"sync"
	"time"
)

// A drift resync must never delay a user's change. At 10,000 load balancers a resync that
// queued every key in the Service queue put a Service created just after it behind all of
// them: minutes, with a cloud that answers in hundreds of milliseconds. So the resync's keys
// wait in a queue of their own (resyncQueue), and a feed admits them into the Service queue one
// at a time, only while
//   - nothing but the resync's own admitted keys waits in the Service queue: a change queued by
//     an event or a retry is taken by the next free worker, never behind the resync; and
//   - fewer than resyncLimit(workers) admitted syncs are unfinished: the rest of the workers
//     stay free for changes, so a change never waits for a worker the resync holds.
// A key that is already queued or being synced for its own reasons is not admitted: that sync
// compares with the cloud anyway, and it stays loud (its Events are recorded).

// feedPoll is how often the feed looks again at a Service queue that had work waiting.
const feedPoll = 20 * time.Millisecond

// resyncLimit is how many of the workers the drift resync may hold at once: half, at least one.
func resyncLimit(workers int) int { return max(1, workers/2) }

// fairness tracks, per key, why it is in the Service queue.
type fairness struct {
	mu        sync.Mutex
	queued    map[string]struct{} // added for its own sync (an event, a retry) and not yet taken
	active    map[string]struct{} // being synced by a worker
	admitted  map[string]struct{} // admitted from the resync and not yet done
	waiting   int                 // of those, how many no worker has taken yet
	slots     chan struct{}       // one token per admitted, unfinished resync sync
	slotsOnce sync.Once
}

func newFairness() fairness {
	return fairness{queued: map[string]struct{}{}, active: map[string]struct{}{}, admitted: map[string]struct{}{}}
}

// setLimit sizes the resync's share of the workers; the first call wins (Run calls it once).
func (f *fairness) setLimit(n int) {
	f.slotsOnce.Do(func() { f.slots = make(chan struct{}, n) })
}

// markQueued records that key is queued for a sync of its own.
func (f *fairness) markQueued(key string) {
	f.mu.Lock()
	f.queued[key] = struct{}{}
	f.mu.Unlock()
}

// take records that a worker took key from the Service queue.
func (f *fairness) take(key string) {
	f.mu.Lock()
	delete(f.queued, key)
	f.active[key] = struct{}{}
	if _, ok := f.admitted[key]; ok {
		f.waiting--
	}
	f.mu.Unlock()
}

// done records that key's sync is over, and frees its resync slot if it was admitted.
func (f *fairness) done(key string) {
	f.mu.Lock()
	delete(f.active, key)
	_, admitted := f.admitted[key]
	delete(f.admitted, key)
	f.mu.Unlock()
	if admitted {
		f.release()
	}
}

func (f *fairness) release() {
	select {
	case <-f.slots:
	default:
	}
}

// admit reports whether key, from the resync, may go into the Service queue now, and if so
// records it as admitted.
func (f *fairness) admit(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, q := f.queued[key]
	_, a := f.active[key]
	_, again := f.admitted[key]
	if q || a || again {
		return false
	}
	f.admitted[key] = struct{}{}
	f.waiting++
	return true
}

// admittedWaiting is how many admitted keys wait in the Service queue for a worker.
func (f *fairness) admittedWaiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waiting
}

// enqueueKey queues key for a sync of its own (an event's).
func (c *Controller) enqueueKey(key string) {
	c.fair.markQueued(key)
	c.queue.Add(key)
}

// changed queues key for the sync of a change: a resync mark it had is dropped, so the sync
// records the usual Events. Both happen under c.mu, as admitResync's check and mark do, so a
// change is either seen by the admission (which then leaves the key) or clears its mark.
func (c *Controller) changed(key string) {
	c.mu.Lock()
	delete(c.resync, key)
	c.fair.markQueued(key)
	c.mu.Unlock()
	c.queue.Add(key)
}

// runResyncFeed admits the resync's keys into the Service queue, paced as said above, until
// ctx is done (Run then shuts the resync queue down). Run starts it after setLimit.
func (c *Controller) runResyncFeed(ctx context.Context) {
	for {
		key, quit := c.resyncQueue.Get()
		if quit {
			return
		}
		c.resyncQueue.Done(key)
		select {
		case c.fair.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		for c.queue.Len() > c.fair.admittedWaiting() { // a change waits
			select {
			case <-time.After(feedPoll):
			case <-ctx.Done():
				return
			}
		}
		if !c.admitResync(key) {
			c.fair.release()
		}
	}
}

// admitResync moves key from the resync into the Service queue, marked for a quiet sync, unless
// it is queued or being synced for its own reasons, in failure back-off, or no longer one this
// controller synced. It reports whether it did.
func (c *Controller) admitResync(key string) bool {
	if c.queue.NumRequeues(key) > 0 {
		return false // its retry will compare with the cloud
	}
	c.mu.Lock()
	_, synced := c.state[key]
	ok := synced && c.fair.admit(key)
	if ok {
		c.resync[key] = struct{}{}
	}
	c.mu.Unlock()
	if ok {
		c.queue.Add(key)
	}
	return ok
}
