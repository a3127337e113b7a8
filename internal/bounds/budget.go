package bounds

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Defaults of the receive side of the byte budget.
const (
	// DefaultTotalBytes is the one budget of what the guard holds for
	// agents: replies and events queued for them (the relay's total
	// bound) and what it is still receiving from them (agent messages,
	// /mcp bodies). It is the relay's DefaultTotalMaxBytes.
	DefaultTotalBytes = 512 << 20
	// DefaultUserReceiveBytes is one user's share of the budget for what
	// is being received: two whole agent messages (64 MiB each), so that
	// one user's many connections cannot take the budget from everyone.
	DefaultUserReceiveBytes = 128 << 20
)

// The bounds a Reserve can be refused by (also metric labels, with the
// "receive_" prefix of a cut-off; ReceiveTimeout is a wsagent's).
const (
	BoundUserReceive  = "receive_user_bytes"  // the user's share of bytes being received
	BoundTotalReceive = "receive_total_bytes" // the whole budget, queued bytes included
	BoundReceiveTime  = "receive_timeout"     // a message did not arrive in time (internal/wsagent)
)

// OverBudget is a refused Reserve: which bound, what it held, and the
// bound. Its text is a close reason or an HTTP error as it is.
type OverBudget struct {
	Bound     string
	Held, Max int64
	Requested int64
	Queued    int64 // bytes queued for agents when refused (BoundTotalReceive)
	WhatFor   string
}

func (e *OverBudget) Error() string {
	if e.Bound == BoundUserReceive {
		return fmt.Sprintf("cdpguard: %s over the user's share of the byte budget (%s, %d MiB)", e.WhatFor, e.Bound, e.Max>>20)
	}
	return fmt.Sprintf("cdpguard: %s over the byte budget (%s, %d MiB; %d MiB queued)", e.WhatFor, e.Bound, e.Max>>20, e.Queued>>20)
}

// Budget is the receive side of the one byte budget: bytes reserved while
// an agent's message or an /mcp body is being read, counted against the
// total together with the bytes queued for agents (Queued), and against
// the user's share. A nil *Budget refuses nothing. Safe for concurrent
// use; a Reserve is one short lock, taken only for messages past the
// small size every connection reads for free (internal/wsagent).
type Budget struct {
	total, user int64
	queued      func() int64

	mu    sync.Mutex
	n     int64
	held  atomic.Int64 // n, read without the lock (Held, by the relay for every message it queues)
	users map[string]int64
}

// NewBudget returns a Budget of total bytes (queued bytes included) with
// a per-user share of user bytes for what is being received; queued (nil:
// none) returns the bytes queued for agents now. Zero values take the
// defaults; a negative value turns that bound off.
func NewBudget(total, user int64, queued func() int64) *Budget {
	if total == 0 {
		total = DefaultTotalBytes
	}
	if user == 0 {
		user = DefaultUserReceiveBytes
	}
	if queued == nil {
		queued = func() int64 { return 0 }
	}
	return &Budget{total: total, user: user, queued: queued, users: map[string]int64{}}
}

// Reserve takes n more bytes for user's what (a message, a body: the
// refusal names it), or returns an *OverBudget and takes nothing.
func (b *Budget) Reserve(user, what string, n int64) error {
	if b == nil || n <= 0 {
		return nil
	}
	q := b.queued()
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.users[user]
	if b.user >= 0 && u+n > b.user {
		return &OverBudget{Bound: BoundUserReceive, Held: u, Max: b.user, Requested: n, Queued: q, WhatFor: what}
	}
	if b.total >= 0 && b.n+n+q > b.total {
		return &OverBudget{Bound: BoundTotalReceive, Held: b.n, Queued: q, Max: b.total, Requested: n, WhatFor: what}
	}
	b.n += n
	b.held.Store(b.n)
	b.users[user] = u + n
	return nil
}

// Release gives back n bytes user reserved.
func (b *Budget) Release(user string, n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n -= n
	b.held.Store(b.n)
	if u := b.users[user] - n; u > 0 {
		b.users[user] = u
	} else {
		delete(b.users, user)
	}
}

// Receiving returns the bytes reserved for what is being received, in
// all and for the user with the most.
func (b *Budget) Receiving() (total, most int64) {
	if b == nil {
		return 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, n := range b.users {
		most = max(most, n)
	}
	return b.n, most
}

// Held returns the bytes reserved for what is being received, in all:
// the relay counts them with its queued bytes against the same total
// (relay.Bounds.Elsewhere), once for every message it queues, so it takes
// no lock. A nil Budget holds none.
func (b *Budget) Held() int64 {
	if b == nil {
		return 0
	}
	return b.held.Load()
}
