package relay

import (
	"fmt"
	"sync"
	"time"
)

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
	// Elsewhere, when set, returns the bytes of the same total budget
	// held outside the relay (agent messages and /mcp bodies being
	// received: internal/bounds' Budget), counted with the queued bytes
	// against TotalMaxBytes. It runs on the mux read loop for every
	// message queued, so it must be cheap.
	Elsewhere func() int64
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
