package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// stallConn is an agent's WebSocket whose per-write stall bound costs no
// allocation per message. coder/websocket registers a context.AfterFunc for
// every write whose context can end, so a context.WithTimeout per message
// costs a timer, a context and a callback each time. Here
// one timer per connection is reset before each write and stopped after it,
// the write itself gets a context that never ends, and one context.AfterFunc
// per connection aborts a write in progress when the relay's writer context
// ends (as the per-write context did).
//
// Only the relay's writer goroutine calls Write and Close; the timer and the
// AfterFunc callbacks touch only atomics and CloseNow.
type stallConn struct {
	*wsAgentConn // Read, and the conn/bound/onStall the handler set up

	timer     *time.Timer // the stall bound, made by the first write
	writing   atomic.Bool // a write is in progress (for the context watcher)
	watched   context.Context
	stopWatch func() bool
}

// newStallConn wraps the handler's connection (cdpguard/http.go).
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
	if !s.timer.Stop() { // the bound fired during this write: the socket is closed
		if s.onStall != nil {
			s.onStall()
		}
		return fmt.Errorf("write: %w (bound %v)", errAgentStalled, s.writeTimeout)
	}
	return err
}

// stall runs when a write outlasts the bound: closing the socket ends the
// write at once.
func (s *stallConn) stall() { _ = s.c.CloseNow() }

// abortWrite runs when the writer's context ends: a write in progress ends
// at once; otherwise the relay's writer closes the socket with its reason.
func (s *stallConn) abortWrite() {
	if s.writing.Load() {
		_ = s.c.CloseNow()
	}
}

func (s *stallConn) Close(code int, reason string) error {
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.stopWatch != nil {
		s.stopWatch()
	}
	return s.wsAgentConn.Close(code, reason)
}
