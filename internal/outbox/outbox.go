// Package outbox runs work that event filters and the browser connection's
// read loop decide on but must not do themselves: sending to the browser
// can block on the connection the read loop drains, or behind another
// writer's multi-MB message. The guard queues there undoing an agent's
// attachment to a target it may not hold, ending sessions on a target that
// left web content, closing a crashed tab or one over the cap, failing a
// pause the judge cannot queue. (The guard's dialog answers wait for
// Chrome's reply, each on a goroutine internal/dialogs owns.)
//
// One goroutine, the guard's, runs a Queue until the browser connection
// ends (so that a pause failed while the guard closes is still answered);
// Add never blocks.
package outbox

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// Queue is work to run in order on one goroutine.
type Queue struct {
	mu   sync.Mutex
	q    []func()
	wake chan struct{}
}

// New returns an empty queue whose wake channel holds one signal, so that
// Add never blocks and adds made while Run is busy merge into one more pass
// over the queue.
func New() *Queue { return &Queue{wake: make(chan struct{}, 1)} }

// Add queues f; it never blocks.
func (e *Queue) Add(f func()) {
	e.mu.Lock()
	e.q = append(e.q, f)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run runs queued work in order until done is closed.
func (e *Queue) Run(done <-chan struct{}) {
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

// Flush waits until the work queued before it has run, or until done is
// closed (Run has stopped, or will not get to it).
func (e *Queue) Flush(done <-chan struct{}) {
	ran := make(chan struct{})
	e.Add(func() { close(ran) })
	select {
	case <-ran:
	case <-done:
	}
}

// Browser sends a command to the browser without waiting for its reply
// (relay.Mux).
type Browser interface {
	Send(sessionID, method string, params any) error
}

// Sender returns a sender (the Fetch judge; dialogs without a caller) for code that runs on
// the read loop: its Send queues the send to b on e, never blocks and
// reports no error; a failed send is logged at debug level, except that
// the browser is gone.
func (e *Queue) Sender(b Browser, log *slog.Logger) Browser {
	return sender{e, b, log}
}

type sender struct {
	q   *Queue
	b   Browser
	log *slog.Logger
}

func (s sender) Send(sessionID, method string, params any) error {
	s.q.Add(func() {
		if err := s.b.Send(sessionID, method, params); err != nil && !errors.Is(err, relay.ErrBrowserLost) {
			s.log.Debug("browser send failed", "method", method, "err", err)
		}
	})
	return nil
}
