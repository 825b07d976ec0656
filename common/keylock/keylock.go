// Package keylock serialises work per key, such as a Service's namespace/name.
//
// The library's service controller handles one Service in one worker at a time, but its node
// sync calls UpdateLoadBalancer from another goroutine for the Services it has cached, also
// while a worker is deleting that Service's load balancer. Without a lock per Service, an
// update that overlaps the delete can write the load balancer (or a part of it) back after
// the delete, and nothing would ever remove it again.
package keylock

import "sync"

// Locks is a set of mutexes by key; the zero value is ready to use. Entries exist only while
// held or waited for, so the set does not grow with the keys ever used.
type Locks struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	mu      sync.Mutex
	holders int // holding or waiting
}

// Lock blocks until key is free, takes it, and returns the func that frees it.
func (l *Locks) Lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*entry{}
	}
	e := l.m[key]
	if e == nil {
		e = &entry{}
		l.m[key] = e
	}
	e.holders++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.holders--; e.holders == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}

// held counts the keys held or waited for (for tests).
func (l *Locks) held() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}
