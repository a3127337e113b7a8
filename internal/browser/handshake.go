package browser

import (
	"context"
	"fmt"
	"sync"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// handshakeID is the id of the Browser.getVersion command that Launch and
// Dial send before handing the connection over. Its reply never reaches the
// caller, so it cannot collide with the caller's ids; it is large only to be
// easy to recognise in a protocol log.
const handshakeID = 2_000_000_001

// maxPending bounds the messages other than the handshake reply that are kept
// for the caller while waiting for it. Chrome sends none before the first
// command of a fresh connection; the bound only stops a confused peer.
const maxPending = 1024

// handshakeRequest is Browser.getVersion with handshakeID.
var handshakeRequest = []byte(fmt.Sprintf(`{"id":%d,"method":"Browser.getVersion"}`, handshakeID))

// handshakeReply is the part of a CDP reply the handshake reads.
type handshakeReply struct {
	ID     int64 `json:"id"`
	Result *struct {
		ProtocolVersion string `json:"protocolVersion"`
		Product         string `json:"product"`
		UserAgent       string `json:"userAgent"`
		JSVersion       string `json:"jsVersion"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// handshake asks the browser for its version over conn, which proves the
// connection carries CDP. ctx bounds it: when ctx ends, abort is called (it
// must make conn's reads fail) and the ctx error is returned. Messages that
// arrive before the reply are returned for replay.
func handshake(ctx context.Context, conn Conn, abort func()) (*Version, [][]byte, error) {
	type result struct {
		v       *Version
		pending [][]byte
		err     error
	}
	ch := make(chan result, 1)
	go func() {
		v, pending, err := awaitVersion(conn)
		ch <- result{v, pending, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.pending, r.err
	case <-ctx.Done():
		abort()
		<-ch // abort makes the read fail; wait so no goroutine outlives us
		return nil, nil, fmt.Errorf("%w: no answer to Browser.getVersion: %w", ErrStartup, ctx.Err())
	}
}

func awaitVersion(conn Conn) (*Version, [][]byte, error) {
	if err := conn.WriteMessage(handshakeRequest); err != nil {
		return nil, nil, fmt.Errorf("%w: send Browser.getVersion: %w", ErrStartup, err)
	}
	var pending [][]byte
	for {
		msg, err := conn.ReadMessage()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: read Browser.getVersion reply: %w", ErrStartup, err)
		}
		var reply handshakeReply
		if jsonv2.Unmarshal(msg, &reply) != nil || reply.ID != handshakeID {
			if len(pending) >= maxPending {
				return nil, nil, fmt.Errorf("%w: no Browser.getVersion reply among %d messages", ErrStartup, maxPending)
			}
			pending = append(pending, msg)
			continue
		}
		if reply.Error != nil {
			return nil, nil, fmt.Errorf("%w: Browser.getVersion: %s (code %d)", ErrStartup, reply.Error.Message, reply.Error.Code)
		}
		if reply.Result == nil {
			return nil, nil, fmt.Errorf("%w: Browser.getVersion reply without result", ErrStartup)
		}
		return &Version{
			Browser:         reply.Result.Product,
			ProtocolVersion: reply.Result.ProtocolVersion,
			UserAgent:       reply.Result.UserAgent,
			V8Version:       reply.Result.JSVersion,
		}, pending, nil
	}
}

// replayConn returns messages that arrived during the handshake before
// reading further from the underlying Conn.
type replayConn struct {
	Conn
	mu      sync.Mutex
	pending [][]byte
}

// withReplay wraps conn only when there is something to replay.
func withReplay(conn Conn, pending [][]byte) Conn {
	if len(pending) == 0 {
		return conn
	}
	return &replayConn{Conn: conn, pending: pending}
}

// ReadMessage implements Conn.
func (c *replayConn) ReadMessage() ([]byte, error) {
	c.mu.Lock()
	if len(c.pending) > 0 {
		msg := c.pending[0]
		c.pending[0] = nil
		c.pending = c.pending[1:]
		c.mu.Unlock()
		return msg, nil
	}
	c.mu.Unlock()
	return c.Conn.ReadMessage()
}

// Close implements Conn and drops what was not replayed.
func (c *replayConn) Close() error {
	c.mu.Lock()
	c.pending = nil
	c.mu.Unlock()
	return c.Conn.Close()
}
