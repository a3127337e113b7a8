package relay

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// This file holds the bytes the guard holds for agents: the bounds
// (Bounds), the counts of one agent, one user and every agent (tally),
// an agent's outgoing queue (enqueue, release), the back-pressure that
// stops reading an agent's commands while its queue, its user's, or the
// replies its commands in the browser owe are over the mark (waitRoom),
// and the cut-off of an agent over a maximum or the pause bound.

// Defaults of the byte bounds on what the guard holds for agents
// (docs/decisions/2026-12-02-bounds.md says why these numbers).
const (
	// DefaultAgentQueueBytes is an agent's back-pressure mark: with more
	// than this queued for it, the guard stops reading its commands until
	// the queue is back under half of it.
	DefaultAgentQueueBytes = 8 << 20
	// DefaultAgentMaxBytes cuts an agent off at once: more than this is
	// queued for it (replies to commands already in the browser kept
	// coming after reading stopped).
	DefaultAgentMaxBytes = 64 << 20
	// DefaultUserQueueBytes is the back-pressure mark of all of one
	// user's agents together.
	DefaultUserQueueBytes = 16 << 20
	// DefaultUserMaxBytes bounds all of one user's agents together: the
	// agent whose message would take the user over it is cut off.
	DefaultUserMaxBytes = 64 << 20
	// DefaultMaxMessage bounds one reply or event held for an agent. A
	// bigger reply becomes a CDP error naming the bound; a bigger event is
	// dropped and counted.
	DefaultMaxMessage = 32 << 20
	// DefaultMaxInFlight bounds one agent's commands waiting in the
	// browser; more are refused with an error naming the bound.
	DefaultMaxInFlight = 1024
	// DefaultTotalMaxBytes bounds the bytes queued for every agent of the
	// guard together: user keys are only a header, so a client can pose as
	// many users; past it the agent with the most queued is cut off.
	DefaultTotalMaxBytes = 512 << 20
	// DefaultPauseBound is how long an agent's own queue may stay over its
	// back-pressure mark before the agent is cut off.
	DefaultPauseBound = 10 * time.Second
)

// Cut-off kinds, passed to Hooks.CutOff (and a metric label).
const (
	CutAgentBytes = "agent_bytes" // the agent's queue went over its maximum
	CutUserBytes  = "user_bytes"  // the user's queues together went over theirs
	CutPaused     = "paused"      // the agent did not catch up within the pause bound
	CutTotalBytes = "total_bytes" // every agent's queues together went over theirs; this one held the most
)

// Bounds are the byte bounds of one agent and its user. Zero fields take
// the defaults; a negative field turns that bound off (tests only).
type Bounds struct {
	AgentQueueBytes, AgentMaxBytes int64
	UserQueueBytes, UserMaxBytes   int64
	TotalMaxBytes                  int64
	MaxMessage                     int64
	MaxInFlight                    int
	PauseBound                     time.Duration
	// OweWait bounds a wait for a reply while the agent's commands in the
	// browser owe more than its mark (zero: DefaultOweWait).
	OweWait time.Duration
	// Elsewhere, when set, holds bytes of the same total budget outside
	// the relay (agent messages and /mcp bodies being received:
	// internal/bounds' Budget), counted with the queued bytes against
	// TotalMaxBytes. The relay only reads it, on the mux read loop for
	// every message queued, so its Held must be cheap.
	Elsewhere Holder
}

// Holder is a count of bytes the relay reads but never changes: what the
// same byte budget holds outside the relay (Bounds.Elsewhere).
type Holder interface {
	Held() int64
}

// withDefaults fills zero fields.
func (b Bounds) withDefaults() Bounds {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&b.AgentQueueBytes, DefaultAgentQueueBytes)
	def(&b.AgentMaxBytes, DefaultAgentMaxBytes)
	def(&b.UserQueueBytes, DefaultUserQueueBytes)
	def(&b.UserMaxBytes, DefaultUserMaxBytes)
	def(&b.MaxMessage, DefaultMaxMessage)
	def(&b.TotalMaxBytes, DefaultTotalMaxBytes)
	if b.MaxInFlight == 0 {
		b.MaxInFlight = DefaultMaxInFlight
	}
	if b.PauseBound == 0 {
		b.PauseBound = DefaultPauseBound
	}
	if b.OweWait == 0 {
		b.OweWait = DefaultOweWait
	}
	return b
}

// over reports whether n exceeds bound (a negative bound never is).
func over(n, bound int64) bool { return bound >= 0 && n > bound }

// tally counts bytes held and wakes waiters when the count falls to low:
// the back-pressure signal of one agent (its queue) or one user (all its
// agents' queues).
type tally struct {
	mu    sync.Mutex
	n     int64
	since time.Time     // when n last went over mark; zero when under
	wake  chan struct{} // closed when n falls to low; nil when nobody waits
}

// add counts n more bytes (negative: fewer) and returns the new total.
// mark is the back-pressure mark; waiters wake when the total is at most
// mark/2.
func (t *tally) add(n, mark int64, now time.Time) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n += n
	switch {
	case over(t.n, mark):
		if t.since.IsZero() {
			t.since = now
		}
	default:
		t.since = time.Time{}
	}
	if t.wake != nil && (mark < 0 || t.n <= mark/2) {
		close(t.wake)
		t.wake = nil
	}
	return t.n
}

// overSince returns since when the total has been over the mark given to
// add; zero when it is not.
func (t *tally) overSince() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.since
}

// load returns the bytes held.
func (t *tally) load() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// pressed reports whether the total is over mark, and if so a channel
// closed once it falls to mark/2.
func (t *tally) pressed(mark int64) (bool, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !over(t.n, mark) {
		return false, nil
	}
	if t.wake == nil {
		t.wake = make(chan struct{})
	}
	return true, t.wake
}

// outQueue is an agent's outgoing messages: a FIFO counted in bytes. A
// message counts from enqueue until its write ended, so the bytes a slow
// write holds count too.
type outQueue struct {
	mu     sync.Mutex
	msgs   [][]byte
	head   int
	closed bool
	ready  chan struct{} // one token: the writer has something to do
}

func newOutQueue() *outQueue { return &outQueue{ready: make(chan struct{}, 1)} }

// push appends msg; false once the queue is closed (the message is dropped).
func (q *outQueue) push(msg []byte) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.msgs = append(q.msgs, msg)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// pop takes the oldest message, if any.
func (q *outQueue) pop() ([]byte, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.msgs) {
		return nil, false
	}
	m := q.msgs[q.head]
	q.msgs[q.head] = nil
	q.head++
	if q.head == len(q.msgs) { // empty: reuse the array from its start
		q.msgs, q.head = q.msgs[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.msgs) {
		q.msgs = append(q.msgs[:0:0], q.msgs[q.head:]...)
		q.head = 0
	}
	return m, true
}

// close drops every queued message and refuses later ones; it returns the
// bytes dropped.
func (q *outQueue) close() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var n int64
	for _, m := range q.msgs[q.head:] {
		n += int64(len(m))
	}
	q.msgs, q.head, q.closed = nil, 0, true
	return n
}

// cutReason is the close reason of a cut-off: what was over which bound.
func cutReason(kind string, held, bound int64, pause time.Duration) string {
	switch kind {
	case CutAgentBytes:
		return fmt.Sprintf("cdpguard: agent not reading: %d MiB queued, bound %d MiB", held>>20, bound>>20)
	case CutUserBytes:
		return fmt.Sprintf("cdpguard: user's agents not reading: %d MiB queued, bound %d MiB", held>>20, bound>>20)
	case CutTotalBytes:
		return fmt.Sprintf("cdpguard: agents not reading: %d MiB queued in all, bound %d MiB; this one held the most", held>>20, bound>>20)
	default:
		return fmt.Sprintf("cdpguard: agent did not catch up within %v (over %d MiB queued)", pause, bound>>20)
	}
}

// enqueue queues msg for the agent's writer and applies the byte bounds:
// an agent (or user) over its maximum is cut off at once, and one whose
// own queue has stayed over its back-pressure mark longer than the pause
// bound is cut off too. It runs on the mux read loop and never blocks.
func (a *Agent) enqueue(msg []byte) {
	select {
	case <-a.quit:
		return
	default:
	}
	// Counted before it is queued: the writer may take and write it at
	// once, and its release must not come before this count (the totals
	// would dip under what is held, and waitRoom let a command through
	// that the agent's mark should have held back).
	b, n, now := a.opts.Bounds, int64(len(msg)), time.Now()
	held := a.held.add(n, b.AgentQueueBytes, now)
	var user int64
	if a.opts.Share != nil {
		user = a.opts.Share.held.add(n, b.UserQueueBytes, now)
	}
	total := a.m.held.add(n, -1, now)
	if !a.q.push(msg) { // the writer has ended: never written
		a.release(n)
		return
	}
	if b.Elsewhere != nil && b.TotalMaxBytes > 0 {
		total += b.Elsewhere.Held()
	}
	if over(total, b.TotalMaxBytes) {
		if top := a.m.heaviest(); top != nil {
			top.cutOff(CutTotalBytes, total, b.TotalMaxBytes)
		}
	}
	switch {
	case over(held, b.AgentMaxBytes):
		a.cutOff(CutAgentBytes, held, b.AgentMaxBytes)
	case a.opts.Share != nil && over(user, b.UserMaxBytes):
		a.cutOff(CutUserBytes, user, b.UserMaxBytes)
	case b.PauseBound > 0:
		if since := a.held.overSince(); since.Equal(now) { // went over the mark just now
			a.armPause(since)
		}
	}
}

// armPause cuts the agent off if its queue is still over its mark, without
// having fallen under it, PauseBound after since. A timer rather than a
// check on the next message: an agent that sends nothing more and reads
// nothing would never be checked.
func (a *Agent) armPause(since time.Time) {
	t := time.AfterFunc(a.opts.Bounds.PauseBound, func() {
		if a.held.overSince().Equal(since) {
			a.cutOff(CutPaused, a.held.load(), a.opts.Bounds.AgentQueueBytes)
		}
	})
	a.mu.Lock()
	if a.pauseTimer != nil {
		a.pauseTimer.Stop()
	}
	a.pauseTimer = t
	a.mu.Unlock()
}

// release uncounts n bytes written or dropped.
func (a *Agent) release(n int64) {
	if n == 0 {
		return
	}
	now := time.Now()
	a.held.add(-n, a.opts.Bounds.AgentQueueBytes, now)
	a.m.held.add(-n, -1, now)
	if a.opts.Share != nil {
		a.opts.Share.held.add(-n, a.opts.Bounds.UserQueueBytes, now)
	}
}

// cutOff closes the agent for a byte or pause bound and reports it. The
// report comes before the agent's end is signalled: whoever sees the
// connection closed for a bound (a test, the metrics) also sees the
// report, which could otherwise come after Serve closed the connection.
func (a *Agent) cutOff(kind string, held, bound int64) {
	reason := cutReason(kind, held, bound, a.opts.Bounds.PauseBound)
	a.closeThen(StatusPolicy, reason, func() {
		if a.opts.Hooks != nil {
			a.opts.Hooks.CutOff(kind, reason)
		}
	})
}

// dropped reports a reply or event over the one-message bound.
func (a *Agent) dropped(kind string) {
	if a.opts.Hooks != nil {
		a.opts.Hooks.Dropped(kind)
	}
}

// waitRoom holds the agent's reading (back-pressure) while its queue, or
// its user's, is over the back-pressure mark, until it falls to half the
// mark. The pause bound (armPause) and the maxima end an agent that does
// not catch up; the wait ends with it. It reports whether to go on
// reading.
func (a *Agent) waitRoom(ctx context.Context) bool {
	b := a.opts.Bounds
	throttled := false
	for {
		pressed, wake := a.held.pressed(b.AgentQueueBytes)
		if !pressed && a.opts.Share != nil {
			pressed, wake = a.opts.Share.held.pressed(b.UserQueueBytes)
		}
		var owe *time.Timer
		if !pressed {
			if pressed, wake = a.owesTooMuch(b.AgentQueueBytes); pressed {
				// A command that never ends (an evaluate awaiting a promise
				// only a later command resolves) must not stall the agent.
				owe = time.NewTimer(b.OweWait)
			}
		}
		if !pressed {
			return true
		}
		if !throttled {
			throttled = true
			if a.opts.Hooks != nil {
				a.opts.Hooks.Throttled()
			}
		}
		if !a.sleep(ctx, wake, owe) {
			return !a.stopped(ctx)
		}
	}
}

// sleep waits for wake, or for owe to fire (false), the agent's end or
// ctx's end (false); it stops owe.
func (a *Agent) sleep(ctx context.Context, wake <-chan struct{}, owe *time.Timer) bool {
	var expire <-chan time.Time
	if owe != nil {
		defer owe.Stop()
		expire = owe.C
	}
	select {
	case <-wake:
		return true
	case <-expire:
	case <-a.quit:
	case <-ctx.Done():
	}
	return false
}

// stopped reports whether the agent or ctx has ended.
func (a *Agent) stopped(ctx context.Context) bool {
	select {
	case <-a.quit:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// unknownInFlight bounds an agent's commands in the browser until its first
// reply tells their size: a burst sent at once cannot pile up in the
// browser before the average exists.
const unknownInFlight = 16

// DefaultOweWait bounds a wait for a reply when the agent's commands in
// the browser owe more than its mark: past it the next command goes out, so
// a client waiting on a command that only a later one ends is slowed, never
// stalled.
const DefaultOweWait = time.Second

// noteReply keeps the running average of the agent's reply sizes: a
// quarter of each new reply, the first one whole. Only the mux read loop
// calls it.
func (a *Agent) noteReply(n int64) {
	avg := a.replyAvg.Load()
	if avg == 0 {
		avg = n
	} else {
		avg += (n - avg) / 4
	}
	a.replyAvg.Store(max(avg, 1))
	select {
	case a.replied <- struct{}{}:
	default:
	}
}

// owesTooMuch reports whether the replies the agent's commands in the
// browser will bring, at its average reply size, would take its queue over
// mark; if so, the channel gets a token when a reply arrives. Without it
// an agent whose replies are big but that reads just fast enough never
// fills its queue here, while its commands pile up in the browser (and
// their replies in the browser connection ahead of every other user's).
func (a *Agent) owesTooMuch(mark int64) (bool, <-chan struct{}) {
	avg := a.replyAvg.Load()
	if mark < 0 {
		return false, nil
	}
	if avg == 0 { // no reply yet: at most unknownInFlight commands in the browser
		avg = max(mark/unknownInFlight, 1)
	}
	a.mu.Lock()
	n := int64(len(a.inflight))
	a.mu.Unlock()
	if n == 0 || n*avg+a.held.load() <= mark {
		return false, nil
	}
	return true, a.replied
}
