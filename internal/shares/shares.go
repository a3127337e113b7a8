// Package shares keeps one value per key for as long as someone holds it:
// the per-user fairness share of the guard's agent connections. A key's
// value is dropped a grace period after its last holder leaves, so memory
// follows the users connected now (and in the last grace period), not every
// user ever seen.
package shares

import (
	"sync"
	"time"
)

// Table holds one value per key, counted by its holders. The zero value is
// not usable; use New.
type Table[V any] struct {
	newV  func() V
	grace time.Duration
	now   func() time.Time

	mu   sync.Mutex
	m    map[string]*entry[V]
	idle []idleKey // keys whose holders all left, oldest first
}

type entry[V any] struct {
	v       V
	holders int
	gen     uint64 // bumped each time the last holder leaves
}

type idleKey struct {
	key   string
	gen   uint64
	since time.Time
}

// New returns a table whose values are made by newV. A key's value outlives
// its last holder by grace: a value that carries state over time (a rate
// bucket) must not be reset by leaving and coming back, so grace is at least
// the time that state takes to return to its initial value.
func New[V any](newV func() V, grace time.Duration) *Table[V] {
	return &Table[V]{newV: newV, grace: grace, now: time.Now, m: make(map[string]*entry[V])}
}

// Acquire returns key's value, made if absent, and the release function the
// holder calls once when it leaves (later calls do nothing).
func (t *Table[V]) Acquire(key string) (V, func()) {
	v, release, _ := t.TryAcquire(key, 0)
	return v, release
}

// TryAcquire is Acquire unless key already has limit holders (limit <= 0:
// no limit): then ok is false and nothing is held. Checking and counting
// under one lock, racing holders never get past the limit (the cap on one
// user's connections).
func (t *Table[V]) TryAcquire(key string, limit int) (v V, release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sweep(t.now())
	e := t.m[key]
	if e != nil && limit > 0 && e.holders >= limit {
		return v, func() {}, false
	}
	if e == nil {
		e = &entry[V]{v: t.newV()}
		t.m[key] = e
	}
	e.holders++
	var once sync.Once
	return e.v, func() { once.Do(func() { t.release(key, e) }) }, true
}

// release drops one holder of e; the last one queues e for removal.
func (t *Table[V]) release(key string, e *entry[V]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.holders--
	if e.holders > 0 {
		return
	}
	e.gen++
	now := t.now()
	t.idle = append(t.idle, idleKey{key: key, gen: e.gen, since: now})
	t.sweep(now)
}

// sweep removes the values idle for longer than the grace period. The idle
// queue is in time order, so it stops at the first one still in its grace;
// an entry acquired again since it was queued (holders > 0, or a newer
// generation queued) stays.
func (t *Table[V]) sweep(now time.Time) {
	n := 0
	for _, k := range t.idle {
		if now.Sub(k.since) < t.grace {
			break
		}
		n++
		if e := t.m[k.key]; e != nil && e.holders == 0 && e.gen == k.gen {
			delete(t.m, k.key)
		}
	}
	if n > 0 {
		t.idle = append(t.idle[:0], t.idle[n:]...)
	}
}

// Len returns the number of keys held or in their grace period.
func (t *Table[V]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Held returns the number of keys with at least one holder.
func (t *Table[V]) Held() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.m {
		if e.holders > 0 {
			n++
		}
	}
	return n
}

// Range calls f with each value held or in its grace period, under the
// table's lock: f must be short and must not call back into the table.
func (t *Table[V]) Range(f func(V)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.m {
		f(e.v)
	}
}
