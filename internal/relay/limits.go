package relay

import (
	"context"
	"sync"
	"time"
)

// This file holds what one command costs its agent and its user on its
// way to the browser, and what its answer gives back: the rate limits
// (the agent's token bucket and its user's, Share), the user's window of
// commands waiting in the browser (a slot, freed on the reply), and the
// agent's commands in flight by (session, id), freed on the reply. The
// bytes its reply takes in the agent's queue are bytes.go's.

// Defaults of a user's share of the browser connection.
const (
	// DefaultUserRate bounds the commands per second of all of one user's
	// connections together (bursts of twice that).
	DefaultUserRate = 2000
	// DefaultUserWindow bounds one user's commands waiting in the browser.
	// Chrome runs the commands of its one connection in order, so a guard
	// command (the set-up of another user's new tab) waits behind at most
	// this many commands of each busy user.
	DefaultUserWindow = 16
	// slotWait is how long a command waits for a free slot of its user's
	// window. A command unanswered that long is one Chrome already started
	// and is waiting on (an evaluate awaiting a promise, a navigation), not
	// one queued ahead of others; past it the command goes out without a
	// slot, so a client with many long waits is slowed but never stalled.
	slotWait = 500 * time.Millisecond
)

// Share is what all connections of one user share: a rate limit over all of
// them together, a window of commands in flight in the browser, and the
// count of bytes queued for them (Bounds.UserQueueBytes). Its
// zero value is not usable; use NewShare.
type Share struct {
	rate  int
	slots chan struct{}

	held tally // bytes queued for all the user's agents

	mu     sync.Mutex
	tokens float64
	refill time.Time
}

// NewShare returns a Share; rate and window <= 0 take the defaults.
func NewShare(rate, window int) *Share {
	if rate <= 0 {
		rate = DefaultUserRate
	}
	if window <= 0 {
		window = DefaultUserWindow
	}
	return &Share{rate: rate, slots: make(chan struct{}, window)}
}

// QueuedBytes returns the bytes queued for all the user's agents.
func (s *Share) QueuedBytes() int64 { return s.held.load() }

// allow takes one token from the user's bucket.
func (s *Share) allow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return takeToken(&s.tokens, &s.refill, s.rate, time.Now())
}

// acquire takes a slot of the window, waiting up to slotWait; it reports
// whether a slot was taken (the caller then releases it on the reply).
func (s *Share) acquire(ctx context.Context, quit <-chan struct{}) bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(slotWait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	case <-quit:
	}
	return false
}

// release frees a slot taken by acquire.
func (s *Share) release() {
	select {
	case <-s.slots:
	default:
	}
}

// takeToken refills a token bucket of rate tokens a second (capacity twice
// that) and takes one token from it.
func takeToken(tokens *float64, refill *time.Time, rate int, now time.Time) bool {
	limit := float64(2 * rate)
	if refill.IsZero() {
		*tokens = limit
	} else {
		*tokens += now.Sub(*refill).Seconds() * float64(rate)
		if *tokens > limit {
			*tokens = limit
		}
	}
	*refill = now
	if *tokens < 1 {
		return false
	}
	*tokens--
	return true
}

// allow takes one token from the agent's bucket.
func (a *Agent) allow() bool {
	if a.opts.Rate < 0 {
		return true
	}
	return takeToken(&a.tokens, &a.refill, a.opts.Rate, time.Now())
}

// releaseSlot frees the user's window slot p holds, if any.
func (a *Agent) releaseSlot(p *pending) {
	if p.slot && a.opts.Share != nil {
		p.slot = false
		a.opts.Share.release()
	}
}

// inflightKey names one agent command in flight. CDP ids are unique within
// a session, not within a connection: Puppeteer up to 23 numbers each
// CDPSession's commands from 1, so two sessions of one connection may have
// the same id in flight at once, as Chrome allows.
type inflightKey struct {
	session string // the browser session the command went to
	id      int64  // the agent's own id
}

// doneID frees an agent's (session, id) once its command is answered,
// unless the pair now stands for a later command (browser id bid).
func (a *Agent) doneID(key inflightKey, bid int64) {
	a.mu.Lock()
	if a.inflight[key] == bid {
		delete(a.inflight, key)
	}
	a.mu.Unlock()
}
