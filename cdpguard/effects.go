package cdpguard

import (
	"context"
	"sync"
)

// effects runs work that event filters and the mux read loop decide on but
// must not do themselves (sending to the browser can block on the
// connection the read loop drains): undoing an agent's attachment to a
// target it may not hold, ending sessions on a target that left web
// content. One goroutine, started with the guard and ended by it, owns the
// queue; add never blocks.
type effects struct {
	mu   sync.Mutex
	q    []func()
	wake chan struct{}
}

func newEffects() *effects { return &effects{wake: make(chan struct{}, 1)} }

// add queues f; it never blocks.
func (e *effects) add(f func()) {
	e.mu.Lock()
	e.q = append(e.q, f)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// run runs queued work in order until ctx ends.
func (e *effects) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		}
		e.mu.Lock()
		q := e.q
		e.q = nil
		e.mu.Unlock()
		for _, f := range q {
			f()
		}
	}
}
