package awsread

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Batching: look-ups arriving within BatchWindow share one DescribeInstances of up to MaxBatch
// values (EC2 accepts 200 values per filter), so a node-controller resync of 200 Nodes or a
// load balancer update is one call, not one per Node.
const (
	BatchWindow = 20 * time.Millisecond
	MaxBatch    = 200
)

// Batcher gathers the keys asked for within BatchWindow (at most MaxBatch) into one call of
// fetch; every caller waits for the call that holds its keys. fetch runs detached from any one
// caller's context, since others wait on it too, and is bounded by a minute.
type Batcher[K comparable, V any] struct {
	Fetch func(ctx context.Context, keys []K) (map[K]V, error)

	mu  sync.Mutex
	cur *batch[K, V]
}

type batch[K comparable, V any] struct {
	keys    []K
	flushed bool // a full batch is flushed at once and again by its timer: only once counts
	done    chan struct{}
	res     map[K]V
	err     error
}

// Get returns Fetch's answers for keys; a key fetch did not answer is missing.
func (b *Batcher[K, V]) Get(ctx context.Context, keys []K) (map[K]V, error) {
	var wait []*batch[K, V]
	b.mu.Lock()
	for _, k := range keys {
		if b.cur == nil {
			cur := &batch[K, V]{done: make(chan struct{})}
			b.cur = cur
			time.AfterFunc(BatchWindow, func() { b.flush(cur) })
		}
		cur := b.cur
		if !slices.Contains(cur.keys, k) {
			cur.keys = append(cur.keys, k)
		}
		if !slices.Contains(wait, cur) {
			wait = append(wait, cur)
		}
		if len(cur.keys) >= MaxBatch {
			b.cur = nil
			go b.flush(cur)
		}
	}
	b.mu.Unlock()
	out := make(map[K]V, len(keys))
	for _, w := range wait {
		select {
		case <-w.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if w.err != nil {
			return nil, w.err
		}
		for _, k := range keys {
			if v, ok := w.res[k]; ok {
				out[k] = v
			}
		}
	}
	return out, nil
}

func (b *Batcher[K, V]) flush(cur *batch[K, V]) {
	b.mu.Lock()
	if b.cur == cur {
		b.cur = nil
	}
	if cur.flushed {
		b.mu.Unlock()
		return
	}
	cur.flushed = true
	keys := slices.Clone(cur.keys)
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cur.res, cur.err = b.Fetch(ctx, keys)
	close(cur.done)
}
