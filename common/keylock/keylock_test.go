package keylock

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// One key is held by one caller at a time; other keys are not held up; entries go away.
func TestLocks(t *testing.T) {
	var l Locks
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := l.Lock("ns/a")
			defer unlock()
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
		}()
	}
	// While "ns/a" is busy, "ns/b" is taken at once.
	done := make(chan struct{})
	go func() { l.Lock("ns/b")(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("another key waited for ns/a")
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d callers held ns/a at once, want 1", most.Load())
	}
	if n := l.held(); n != 0 {
		t.Errorf("%d entries left after every unlock, want 0", n)
	}
}
