// Package wsagent is an agent's WebSocket as the relay reads and writes it
// (relay.AgentConn): the upgrade, one bound on each write (an agent that
// does not read is cut off, stallConn), a close frame whose reason fits,
// and a bounded close handshake. It knows nothing of users or rules.
package wsagent

import (
	"bufio"
	"net"
	"net/http"
	"time"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/coder/websocket"
)

// agentReadLimit bounds one agent message. Agents send scripts and file
// lists, not screenshots; 64 MiB leaves room for large evaluate payloads.
const agentReadLimit = 64 << 20

// wsAgentConn adapts a WebSocket to relay.AgentConn for reading
// (receiver, receive.go) and closing; stallConn (stall.go) writes: a write
// that cannot finish within writeTimeout (the agent does not read) closes
// the socket.
type wsAgentConn struct {
	c            *websocket.Conn
	raw          net.Conn // the hijacked connection, nil in tests that made c themselves
	writeTimeout time.Duration
	onStall      func()
	rx           *receiver
}

func (w *wsAgentConn) Close(code int, reason string) error {
	if w.rx != nil {
		w.rx.close()
	}
	return closeBounded(w.c, w.raw, websocket.StatusCode(code), clip.String(reason))
}

// closeHandshakeWait bounds the WebSocket close handshake with an agent: the
// close frame (code and reason) is written first, and an agent that does not
// answer it in time (it does not read) is dropped, so shutdown stays bounded.
const closeHandshakeWait = time.Second

// closeBounded closes c with a close frame, dropping the connection if the
// handshake takes longer than closeHandshakeWait. The handshake first reads
// what is left of a message being received, without a bound: an agent that
// stalled mid-message would hold it, and CloseNow only waits for a close
// in progress, so the hijacked connection itself (raw) is closed then.
func closeBounded(c *websocket.Conn, raw net.Conn, code websocket.StatusCode, reason string) error {
	done := make(chan error, 1)
	go func() { done <- c.Close(code, reason) }() // ends at the latest when raw is closed below
	t := time.NewTimer(closeHandshakeWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		if raw != nil {
			_ = raw.Close()
		}
		return c.CloseNow()
	}
}

// The close codes the guard refuses an agent connection with.
const (
	StatusPolicy        = int(websocket.StatusPolicyViolation)
	StatusInternalError = int(websocket.StatusInternalError)
)

// Conn is an accepted agent WebSocket (relay.AgentConn).
type Conn = stallConn

// Options configures an agent's WebSocket. The zero value bounds writes
// and messages by the defaults and takes no budget.
type Options struct {
	// WriteTimeout bounds each write; OnStall counts a write cut off.
	WriteTimeout time.Duration
	OnStall      func()
	// User keys the user's share of Budget; Budget (nil: none) is the
	// receive side of the guard's byte budget, from which a message's
	// bytes past freeBytes are reserved while it is read.
	User   string
	Budget Budget
	// ReceiveTimeout is the base of a message's receive bound (zero:
	// DefaultReceiveTimeout), plus a second per MiB received.
	ReceiveTimeout time.Duration
	// OnCut counts a connection closed by a receive bound, by bound
	// (bounds.BoundUserReceive, BoundTotalReceive, BoundReceiveTime).
	OnCut func(bound string)
}

// Accept upgrades the request to an agent's WebSocket: no compression,
// messages of at most agentReadLimit, read within o's receive bounds, each
// write bounded by o.WriteTimeout. On error Accept has answered the
// request.
func Accept(w http.ResponseWriter, r *http.Request, o Options) (*Conn, error) {
	hw := &hijackRecorder{ResponseWriter: w}
	c, err := websocket.Accept(hw, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(agentReadLimit)
	if o.ReceiveTimeout <= 0 {
		o.ReceiveTimeout = DefaultReceiveTimeout
	}
	rx := &receiver{c: c, raw: hw.conn, user: o.User, budget: o.Budget, timeout: o.ReceiveTimeout, onCut: o.OnCut}
	return newStallConn(&wsAgentConn{c: c, raw: hw.conn, writeTimeout: o.WriteTimeout, onStall: o.OnStall, rx: rx}), nil
}

// hijackRecorder keeps the connection websocket.Accept hijacks, for
// closeBounded.
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	h.conn = c
	return c, rw, err
}

// Reject closes a connection that was never relayed with code and reason.
func (s *stallConn) Reject(code int, reason string) {
	_ = s.c.Close(websocket.StatusCode(code), clip.String(reason))
}

// Clean returns nil for an agent connection that ended normally (the agent
// closed it or went away), err otherwise.
func Clean(err error) error {
	if s := websocket.CloseStatus(err); s == websocket.StatusNormalClosure || s == websocket.StatusNoStatusRcvd || s == websocket.StatusGoingAway {
		return nil
	}
	return err
}
