// Package wsagent is an agent's WebSocket as the relay reads and writes it
// (relay.AgentConn): the upgrade, one bound on each write (an agent that
// does not read is cut off, stallConn), a close frame whose reason fits,
// and a bounded close handshake. It knows nothing of users or rules.
package wsagent

import (
	"context"
	"net/http"
	"time"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/coder/websocket"
)

// agentReadLimit bounds one agent message. Agents send scripts and file
// lists, not screenshots; 64 MiB leaves room for large evaluate payloads.
const agentReadLimit = 64 << 20

// wsAgentConn adapts a WebSocket to relay.AgentConn for reading and
// closing; stallConn (stall.go) writes: a write that cannot finish within
// writeTimeout (the agent does not read) closes the socket.
type wsAgentConn struct {
	c            *websocket.Conn
	writeTimeout time.Duration
	onStall      func()
}

func (w *wsAgentConn) Read(ctx context.Context) ([]byte, error) {
	// Not ctx itself: a cancelled read drops the TCP connection at once,
	// racing the close frame that tells the agent why (relay cancels reads
	// as it closes an agent). Close ends this read instead.
	typ, b, err := w.c.Read(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, &relay.CloseError{Code: int(websocket.StatusUnsupportedData), Reason: "cdpguard: binary frames are not CDP; send JSON in text frames"}
	}
	return b, nil
}

func (w *wsAgentConn) Close(code int, reason string) error {
	return closeBounded(w.c, websocket.StatusCode(code), clip.String(reason))
}

// closeHandshakeWait bounds the WebSocket close handshake with an agent: the
// close frame (code and reason) is written first, and an agent that does not
// answer it in time (it does not read) is dropped, so shutdown stays bounded.
const closeHandshakeWait = time.Second

// closeBounded closes c with a close frame, dropping the connection if the
// handshake takes longer than closeHandshakeWait.
func closeBounded(c *websocket.Conn, code websocket.StatusCode, reason string) error {
	done := make(chan error, 1)
	go func() { done <- c.Close(code, reason) }() // ends at the latest when CloseNow below closes the socket
	t := time.NewTimer(closeHandshakeWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
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

// Accept upgrades the request to an agent's WebSocket: no compression,
// messages of at most agentReadLimit, each write bounded by writeTimeout
// (onStall counts a cut-off). On error Accept has answered the request.
func Accept(w http.ResponseWriter, r *http.Request, writeTimeout time.Duration, onStall func()) (*Conn, error) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(agentReadLimit)
	return newStallConn(&wsAgentConn{c: c, writeTimeout: writeTimeout, onStall: onStall}), nil
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
