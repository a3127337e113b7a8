package wsagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// stallConn is an agent's WebSocket whose per-write stall bound costs no
// allocation per message. coder/websocket registers a context.AfterFunc for
// every write whose context can end, so a context.WithTimeout per message
// costs a timer, a context and a callback each time. Here
// one timer per connection is reset before each write and stopped after it,
// the write itself gets a context that never ends, and one context.AfterFunc
// per connection notices the relay's writer context ending.
//
// A write that outlasts the bound, or is in progress when the relay ends
// the agent (a byte bound cut it off), is not dropped at once: it gets
// closeGrace more to finish, so that an agent that is reading, only slowly,
// still gets the close frame with the reason after it; then the socket is
// dropped. The bytes the relay had queued are released at once either way.
//
// Only the relay's writer goroutine calls Write and Close; the timers and
// the AfterFunc callbacks touch only atomics, the grace timer and CloseNow.
type stallConn struct {
	*wsAgentConn // Read, and the conn/bound/onStall the handler set up

	timer     *time.Timer // the stall bound, made by the first write
	writing   atomic.Bool // a write is in progress (for the context watcher)
	stalled   atomic.Bool // the stall bound fired during the current write
	watched   context.Context
	stopWatch func() bool

	graceOnce sync.Once
	grace     atomic.Pointer[time.Timer] // drops the socket closeGrace after a stall or an abort
}

// closeGrace is how long a write in progress may still take once it has
// stalled or its agent was cut off, so that the close reason can follow it.
const closeGrace = 2 * time.Second

// newStallConn wraps the handler's connection (Accept).
func newStallConn(w *wsAgentConn) *stallConn { return &stallConn{wsAgentConn: w} }

// errAgentStalled ends a write that did not finish within the bound.
var errAgentStalled = errors.New("agent did not read its messages")

func (s *stallConn) Write(ctx context.Context, msg []byte) error {
	if ctx != s.watched { // the relay passes one context per connection: this runs once
		if s.stopWatch != nil {
			s.stopWatch()
		}
		s.watched, s.stopWatch = ctx, context.AfterFunc(ctx, s.abortWrite)
	}
	s.writing.Store(true)
	defer s.writing.Store(false)
	// After writing is set: a context that ended before it is seen here, one
	// that ends after it finds writing set in abortWrite.
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.timer == nil {
		s.timer = time.AfterFunc(s.writeTimeout, s.stall)
	} else {
		s.timer.Reset(s.writeTimeout)
	}
	err := s.c.Write(context.Background(), websocket.MessageText, msg)
	if !s.timer.Stop() || s.stalled.Load() { // the bound fired during this write (stall counted it)
		reason := fmt.Sprintf("cdpguard: agent did not read a message within %v", s.writeTimeout)
		return fmt.Errorf("write: %w (bound %v): %w", errAgentStalled, s.writeTimeout,
			&relay.CloseError{Code: relay.StatusPolicy, Reason: reason})
	}
	return err
}

// stall runs when a write outlasts the bound: it is counted at once (an
// operator, or a test, sees the cut-off while the grace runs).
func (s *stallConn) stall() {
	s.stalled.Store(true)
	if s.onStall != nil {
		s.onStall()
	}
	s.startGrace()
}

// abortWrite runs when the writer's context ends: a write in progress gets
// the grace; otherwise the relay's writer closes the socket with its reason.
func (s *stallConn) abortWrite() {
	if s.writing.Load() {
		s.startGrace()
	}
}

// startGrace drops the socket closeGrace from now, once.
func (s *stallConn) startGrace() {
	s.graceOnce.Do(func() {
		s.grace.Store(time.AfterFunc(closeGrace, func() { _ = s.c.CloseNow() }))
	})
}

func (s *stallConn) Close(code int, reason string) error {
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.stopWatch != nil {
		s.stopWatch()
	}
	err := s.wsAgentConn.Close(code, reason)
	s.graceOnce.Do(func() {}) // no grace timer starts after this
	if t := s.grace.Load(); t != nil {
		t.Stop()
	}
	return err
}
