package cdpguard

import (
	"errors"
	"sync"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// effects runs work that event filters and the mux read loop decide on but
// must not do themselves (sending to the browser can block on the
// connection the read loop drains, or behind another writer's multi-MB
// message): undoing an agent's attachment to a target it may not hold,
// ending sessions on a target that left web content, the guard's dialog
// answers, closing a crashed tab, failing a pause the judge cannot queue.
// One goroutine, started with the guard, owns the queue and runs it until
// the browser connection ends (so that a pause failed while the guard
// closes is still answered); add never blocks.
type effects struct {
	mu   sync.Mutex
	q    []func()
	wake chan struct{}
}

// newEffects returns an empty queue whose wake channel holds one signal, so
// that add never blocks and adds made while run is busy merge into one more
// pass over the queue.
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

// run runs queued work in order until done is closed.
func (e *effects) run(done <-chan struct{}) {
	for {
		select {
		case <-done:
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

// flush waits until the work queued before it has run, or until done is
// closed (run has stopped, or will not get to it).
func (e *effects) flush(done <-chan struct{}) {
	ran := make(chan struct{})
	e.add(func() { close(ran) })
	select {
	case <-ran:
	case <-done:
	}
}

// laterSender sends on the effects goroutine: a Sender (dialogs, Fetch
// judge) for code that runs on the read loop. Send never blocks and reports
// no error; a failed send is logged.
type laterSender struct{ g *Guard }

func (l laterSender) Send(sessionID, method string, params any) error {
	l.g.fx.add(func() {
		if err := l.g.mux.Send(sessionID, method, params); err != nil && !errors.Is(err, relay.ErrBrowserLost) {
			l.g.log.Debug("browser send failed", "method", method, "err", err)
		}
	})
	return nil
}
