package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/coder/websocket"
)

// errConnClosed is returned by calls on a connection whose read loop ended.
var errConnClosed = errors.New("cdp connection closed")

// readLimit fits a 1920x3000 PNG screenshot in base64 with room to spare.
const readLimit = 256 << 20

// cdpError is a protocol error answer.
type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *cdpError) Error() string { return fmt.Sprintf("cdp error %d: %s", e.Code, e.Message) }

// message is the envelope of every CDP frame in either direction.
type message struct {
	ID        int64        `json:"id,omitzero"`
	SessionID string       `json:"sessionId,omitzero"`
	Method    string       `json:"method,omitzero"`
	Params    any          `json:"params,omitzero"`
	Result    jsonv2.Value `json:"result,omitzero"`
	Error     *cdpError    `json:"error,omitzero"`
}

// inbound is message as decoded: params stay raw.
type inbound struct {
	ID        int64        `json:"id,omitzero"`
	SessionID string       `json:"sessionId,omitzero"`
	Method    string       `json:"method,omitzero"`
	Params    jsonv2.Value `json:"params,omitzero"`
	Result    jsonv2.Value `json:"result,omitzero"`
	Error     *cdpError    `json:"error,omitzero"`
}

type reply struct {
	result jsonv2.Value
	err    error
}

type subKey struct{ session, method string }

// conn is a minimal browser-level CDP client over one WebSocket, shared by
// both sides of every pair so that client overhead is identical: flat
// sessions, calls matched by id, events fanned out to subscribers. The bench
// uses it instead of chromedp to keep client cost small and equal, which
// makes the measured ratios sharper rather than diluted.
type conn struct {
	ws *websocket.Conn

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	subs    map[subKey]map[chan jsonv2.Value]struct{}
	err     error

	done chan struct{}
}

// dial connects to a browser-level ws:// URL with the given headers.
func dial(ctx context.Context, wsURL string, header http.Header) (*conn, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPHeader:      header,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", wsURL, err)
	}
	ws.SetReadLimit(readLimit)
	c := &conn{
		ws:      ws,
		pending: map[int64]chan reply{},
		subs:    map[subKey]map[chan jsonv2.Value]struct{}{},
		done:    make(chan struct{}),
	}
	go c.readLoop()
	return c, nil
}

func (c *conn) readLoop() {
	var err error
	for {
		var data []byte
		_, data, err = c.ws.Read(context.Background())
		if err != nil {
			break
		}
		var m inbound
		if err = jsonv2.Unmarshal(data, &m); err != nil {
			err = fmt.Errorf("decode frame: %w", err)
			break
		}
		c.dispatch(&m)
	}
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %w", errConnClosed, err)
	for id, ch := range c.pending {
		ch <- reply{err: c.err}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
	_ = c.ws.CloseNow()
}

func (c *conn) dispatch(m *inbound) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.ID != 0 {
		ch, ok := c.pending[m.ID]
		if !ok {
			return
		}
		delete(c.pending, m.ID)
		if m.Error != nil {
			ch <- reply{err: m.Error}
		} else {
			ch <- reply{result: m.Result}
		}
		return
	}
	for ch := range c.subs[subKey{m.SessionID, m.Method}] {
		select {
		case ch <- m.Params:
		default: // a subscriber that stopped reading loses events, not the conn
		}
	}
}

// call sends method with params (nil for none) on session ("" for the
// browser) and waits for its answer or ctx.
func (c *conn) call(ctx context.Context, session, method string, params any) (jsonv2.Value, error) {
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	b, err := jsonv2.Marshal(message{ID: id, SessionID: session, Method: method, Params: params})
	if err == nil {
		err = c.ws.Write(ctx, websocket.MessageText, b)
	}
	if err != nil {
		c.forget(id)
		return nil, fmt.Errorf("%s: send: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w", method, r.err)
		}
		return r.result, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

func (c *conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// subscribe delivers the params of every later event method on session
// until cancel is called. Subscribe before triggering the event.
func (c *conn) subscribe(session, method string) (<-chan jsonv2.Value, func()) {
	ch := make(chan jsonv2.Value, 64)
	k := subKey{session, method}
	c.mu.Lock()
	if c.subs[k] == nil {
		c.subs[k] = map[chan jsonv2.Value]struct{}{}
	}
	c.subs[k][ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs[k], ch)
		if len(c.subs[k]) == 0 {
			delete(c.subs, k)
		}
		c.mu.Unlock()
	}
}

// wait returns the next value of ch, or an error when ctx ends or the
// connection closes first.
func (c *conn) wait(ctx context.Context, ch <-chan jsonv2.Value, what string) (jsonv2.Value, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-c.done:
		return nil, fmt.Errorf("waiting for %s: %w", what, errConnClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}

// close ends the connection and waits (bounded) for the read loop.
func (c *conn) close() {
	_ = c.ws.CloseNow()
	select {
	case <-c.done:
	case <-time.After(closeWait):
	}
}
