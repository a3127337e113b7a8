package wsagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// This file is the read side of an agent's WebSocket: a message is read
// piece by piece, its bytes past freeBytes reserved from the guard's one
// byte budget as the buffer grows (a user's share, and the total with
// what is queued for agents), and it must arrive within its receive bound
// (DefaultReceiveTimeout plus a second per MiB received). Past either the
// connection is closed with a reason naming the bound, and counted.

// Budget is the receive side of the guard's byte budget (bounds.Budget).
type Budget interface {
	Reserve(user, what string, n int64) error
	Release(user string, n int64)
}

// DefaultReceiveTimeout is the base of a message's receive bound: from its
// first byte a message has this long, plus a second per MiB received so
// far (at least 1 MiB/s on average: a 64 MiB message gets 74 s). Waiting
// for the next message has no bound.
const DefaultReceiveTimeout = 10 * time.Second

// receiveRate is the average rate a long message must keep: the bound
// grows by a second for every receiveRate bytes received.
const receiveRate = 1 << 20

// freeBytes is what each message reads without a reservation: commands
// are a few hundred bytes. Only larger messages take the budget's lock.
const freeBytes = 64 << 10

// scratchBytes is the buffer each connection keeps for reading: a message
// that fits is copied out at its size; a larger one grows a buffer of its
// own. Small, because every idle connection holds it.
const scratchBytes = 4 << 10

// counted is the part of a buffer of n bytes the budget counts.
func counted(n int) int64 { return int64(max(0, n-freeBytes)) }

// receiver reads messages for one connection. Only the relay's read
// goroutine calls read and release; the bound's timer touches atomics and
// closes the socket.
type receiver struct {
	c       *websocket.Conn
	raw     net.Conn // for closeBounded
	user    string
	budget  Budget
	timeout time.Duration
	onCut   func(kind string)

	scratch []byte       // scratchBytes, reused for every message that fits
	held    atomic.Int64 // bytes reserved for the last big message, until the next read or close

	mu       sync.Mutex
	timer    *time.Timer // the receive bound of the message being read
	start    time.Time   // when the message being read began
	received atomic.Int64
	expired  atomic.Bool // the bound fired: the socket is being closed
	reason   string      // the close reason when expired (set before expired)
}

// Read returns the agent's next message (relay.AgentConn), read by the
// connection's receiver.
func (w *wsAgentConn) Read(ctx context.Context) ([]byte, error) {
	if w.rx == nil { // tests that made the connection themselves
		w.rx = &receiver{c: w.c, raw: w.raw, timeout: DefaultReceiveTimeout}
	}
	return w.rx.read(ctx)
}

// read returns the next text message.
func (r *receiver) read(ctx context.Context) ([]byte, error) {
	r.releaseHeld()
	// Not ctx itself: a cancelled read drops the TCP connection at once,
	// racing the close frame that tells the agent why (relay cancels reads
	// as it closes an agent). Close ends this read instead.
	typ, rd, err := r.c.Reader(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, &relay.CloseError{Code: int(websocket.StatusUnsupportedData), Reason: "cdpguard: binary frames are not CDP; send JSON in text frames"}
	}
	if r.scratch == nil {
		r.scratch = make([]byte, scratchBytes)
	}
	buf, n := r.scratch, 0
	armed := false
	defer func() {
		if armed {
			r.disarm()
		}
	}()
	for {
		if n == len(buf) {
			next := min(2*len(buf), agentReadLimit+1)
			if next <= len(buf) { // the library's read limit ends such a message first
				next = len(buf) + freeBytes
			}
			if err := r.reserve(counted(next) - counted(len(buf))); err != nil {
				r.releaseHeld()
				return nil, err
			}
			grown := make([]byte, next)
			copy(grown, buf[:n])
			buf = grown
		}
		m, err := rd.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.releaseHeld()
			if r.expired.Load() {
				return nil, r.expiredErr()
			}
			return nil, err
		}
		if !armed {
			armed = true
			r.arm()
		}
		r.received.Store(int64(n))
	}
	if len(buf) == scratchBytes { // the scratch buffer: the message is the relay's to keep
		return append([]byte(nil), buf[:n]...), nil
	}
	return buf[:n], nil // held stays reserved until the next read: the relay holds the bytes till then
}

// reserve takes n more bytes for the message being read.
func (r *receiver) reserve(n int64) error {
	if r.budget == nil || n <= 0 {
		return nil
	}
	if r.expired.Load() { // the receive bound already closes the socket (and counted it)
		return r.expiredErr()
	}
	if err := r.budget.Reserve(r.user, "message", n); err != nil {
		var over *bounds.OverBudget
		kind := bounds.BoundTotalReceive
		if errors.As(err, &over) {
			kind = over.Bound
		}
		if r.onCut != nil {
			r.onCut(kind)
		}
		return fmt.Errorf("wsagent: %w", &relay.CloseError{Code: relay.StatusPolicy, Reason: err.Error()})
	}
	r.held.Add(n)
	return nil
}

// releaseHeld gives back what the last big message reserved.
func (r *receiver) releaseHeld() {
	if n := r.held.Swap(0); n > 0 && r.budget != nil {
		r.budget.Release(r.user, n)
	}
}

// arm starts the receive bound of a message that did not arrive in one
// piece.
func (r *receiver) arm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start = time.Now()
	r.received.Store(0)
	if r.timer == nil {
		r.timer = time.AfterFunc(r.timeout, r.check)
	} else {
		r.timer.Reset(r.timeout)
	}
}

// disarm stops the bound once the message is read.
func (r *receiver) disarm() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timer.Stop()
}

// check runs when the bound may have passed: a message that kept up its
// rate gets the time its bytes earned, one that did not ends the socket.
func (r *receiver) check() {
	r.mu.Lock()
	got := r.received.Load()
	due := r.start.Add(r.timeout + time.Duration(got/receiveRate)*time.Second)
	if left := time.Until(due); left > 0 {
		r.timer.Reset(left)
		r.mu.Unlock()
		return
	}
	elapsed := time.Since(r.start).Round(time.Second)
	r.mu.Unlock()
	if r.expired.Load() {
		return
	}
	r.reason = fmt.Sprintf("cdpguard: message not received in time (%s, %v + 1s/MiB): %d MiB in %v",
		bounds.BoundReceiveTime, r.timeout, got>>20, elapsed)
	r.expired.Store(true)
	if r.onCut != nil {
		r.onCut(bounds.BoundReceiveTime)
	}
	// The close frame carries the reason; the read blocked on the agent
	// ends when the handshake gives up (closeBounded).
	go func() { _ = closeBounded(r.c, r.raw, websocket.StatusPolicyViolation, r.reason) }() // ends within the close handshake's bound
}

// expiredErr is what a read ended by the receive bound returns.
func (r *receiver) expiredErr() error {
	return fmt.Errorf("wsagent: %w", &relay.CloseError{Code: relay.StatusPolicy, Reason: r.reason})
}

// close stops the bound and gives back what the connection reserved (a
// read still running gives back what it reserves later when it fails).
func (r *receiver) close() {
	r.mu.Lock()
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.releaseHeld()
}
