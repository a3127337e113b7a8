// Package cdptest is the e2e suite's and the bench's test support: one raw
// CDP client (Client) and one way to start a guard for a test (StartGuard).
// The client sends exactly what it is given, so tests can play a hostile
// agent, and it adds no cost of its own worth measuring, so the bench can
// drive both sides of a pair with it.
package cdptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/coder/websocket"
)

// ErrClosed is returned by calls on a client whose connection has ended.
var ErrClosed = errors.New("cdp connection closed")

// readLimit fits a 1920x3000 PNG screenshot in base64 with room to spare.
const readLimit = 256 << 20

// closeWait bounds how long Close waits for the read loop.
const closeWait = 10 * time.Second

// Error is a CDP error answer.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("cdp error %d: %s", e.Code, e.Message) }

// Message is one frame as received: params, result and error stay raw or
// loosely decoded, and Raw is the frame itself. RawID is the id as
// written (a hostile test's ids need not be integers); ID is it parsed,
// 0 when it is not a positive integer.
type Message struct {
	ID        int64        `json:"-"`
	RawID     jsonv2.Value `json:"id,omitzero"`
	SessionID string       `json:"sessionId,omitzero"`
	Method    string       `json:"method,omitzero"`
	Params    jsonv2.Value `json:"params,omitzero"`
	Result    jsonv2.Value `json:"result,omitzero"`
	Error     *Error       `json:"error,omitzero"`
	Raw       []byte       `json:"-"`
}

// command is what Call sends.
type command struct {
	ID        int64  `json:"id"`
	SessionID string `json:"sessionId,omitzero"`
	Method    string `json:"method"`
	Params    any    `json:"params,omitzero"`
}

// Options configure Dial. The zero value is a plain client.
type Options struct {
	// Header is sent with the WebSocket handshake (e.g. the user header).
	Header http.Header
	// OnMessage, if set, sees every frame as it arrives, on the read
	// goroutine, before Call or a subscriber gets it; undecodable frames
	// have only Raw. It must not block.
	OnMessage func(*Message)
	// Record keeps every event for Events and WaitEvent: tests that look
	// for what must never arrive.
	Record bool
	// Inbox, when above 0, also queues every frame, up to that many, for
	// Next and CallID: tests that write frames of their own (WriteFrame)
	// and read every answer. Frames past a full inbox are dropped.
	Inbox int
	// Stall, when closed, stops the client reading at its next frame, with
	// the connection left open: a client that stopped reading, whose
	// socket fills up. Stalled says when; Resume reads again.
	Stall <-chan struct{}
}

type reply struct {
	result jsonv2.Value
	err    error
}

type subKey struct{ session, method string }

// Client is a browser-level CDP client over one WebSocket: flat sessions,
// calls matched by id, events fanned out to subscribers.
type Client struct {
	ws        *websocket.Conn
	onMessage func(*Message)
	record    bool
	inbox     chan Message
	stall     <-chan struct{}
	stalled   chan struct{}
	resume    chan struct{}
	resumeMu  sync.Once

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan reply
	subs    map[subKey]map[chan jsonv2.Value]struct{}
	err     error
	code    websocket.StatusCode
	reason  string
	events  []Message // every event, when recording

	done chan struct{}
}

// Dial connects to a ws:// CDP URL.
func Dial(ctx context.Context, wsURL string, o Options) (*Client, error) {
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
		HTTPHeader:      o.Header,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", wsURL, err)
	}
	ws.SetReadLimit(readLimit)
	c := &Client{
		ws:        ws,
		onMessage: o.OnMessage,
		record:    o.Record,
		stall:     o.Stall,
		stalled:   make(chan struct{}),
		resume:    make(chan struct{}),
		pending:   map[int64]chan reply{},
		subs:      map[subKey]map[chan jsonv2.Value]struct{}{},
		done:      make(chan struct{}),
	}
	if o.Inbox > 0 {
		c.inbox = make(chan Message, o.Inbox)
	}
	go c.readLoop()
	return c, nil
}

// BrowserURL asks base (http://host:port) for its browser WebSocket URL,
// with header, and returns it on base's host: what a client that was told
// only the HTTP endpoint connects to.
func BrowserURL(ctx context.Context, base string, header http.Header) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/json/version", nil)
	if err != nil {
		return "", err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("/json/version: %w", err)
	}
	defer resp.Body.Close()
	var v struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil {
		err = jsonv2.Unmarshal(body, &v)
	}
	if err != nil || v.WS == "" {
		return "", fmt.Errorf("/json/version: no webSocketDebuggerUrl (%v)", err)
	}
	ws := "ws" + strings.TrimPrefix(base, "http")
	if i := strings.Index(v.WS, "/devtools/"); i >= 0 {
		ws += v.WS[i:]
	}
	return ws, nil
}

func (c *Client) readLoop() {
	var err error
	for {
		var data []byte
		_, data, err = c.ws.Read(context.Background())
		if err != nil {
			break
		}
		m := &Message{Raw: data}
		if jsonv2.Unmarshal(data, m) != nil {
			m = &Message{Raw: data}
		}
		if id, err := strconv.ParseInt(string(m.RawID), 10, 64); err == nil && id > 0 {
			m.ID = id
		}
		if c.onMessage != nil {
			c.onMessage(m)
		}
		c.dispatch(m)
		if c.inbox != nil {
			select {
			case c.inbox <- *m:
			default: // a test that floods reads the counts, not every message
			}
		}
		if c.stall != nil {
			select {
			case <-c.stall:
				c.stall = nil
				close(c.stalled)
				<-c.resume
			default:
			}
		}
	}
	c.mu.Lock()
	c.err = fmt.Errorf("%w: %w", ErrClosed, err)
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		c.code, c.reason = ce.Code, ce.Reason
	} else {
		c.code, c.reason = -1, err.Error()
	}
	for id, ch := range c.pending {
		ch <- reply{err: c.err}
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
	_ = c.ws.CloseNow()
}

func (c *Client) dispatch(m *Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m.ID != 0 {
		ch, ok := c.pending[m.ID]
		if !ok {
			return // an id the caller wrote itself (through Conn)
		}
		delete(c.pending, m.ID)
		if m.Error != nil {
			ch <- reply{err: m.Error}
		} else {
			ch <- reply{result: m.Result}
		}
		return
	}
	if m.Method == "" {
		return
	}
	if c.record {
		c.events = append(c.events, *m)
	}
	for ch := range c.subs[subKey{m.SessionID, m.Method}] {
		select {
		case ch <- m.Params:
		default: // a subscriber that stopped reading loses events, not the conn
		}
	}
}

// Call sends method with params (nil for none) on session ("" for the
// browser) and waits for its answer or ctx. A CDP error answer is an *Error.
func (c *Client) Call(ctx context.Context, session, method string, params any) (jsonv2.Value, error) {
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
	b, err := jsonv2.Marshal(command{ID: id, SessionID: session, Method: method, Params: params})
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
		return nil, fmt.Errorf("%s: no answer: %w", method, ctx.Err())
	}
}

func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Subscribe delivers the params of every later event method on session
// until cancel is called. Subscribe before triggering the event.
func (c *Client) Subscribe(session, method string) (<-chan jsonv2.Value, func()) {
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

// Wait returns the next value of ch, or an error when ctx ends or the
// connection closes first.
func (c *Client) Wait(ctx context.Context, ch <-chan jsonv2.Value, what string) (jsonv2.Value, error) {
	select {
	case v := <-ch:
		return v, nil
	case <-c.done:
		return nil, fmt.Errorf("waiting for %s: %w", what, ErrClosed)
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for %s: %w", what, ctx.Err())
	}
}

// Conn returns the WebSocket underneath: for frames no real client sends
// (malformed JSON, binary frames, ids of the caller's choosing; answers to
// them reach only OnMessage) and for closing with a code of the caller's
// choosing. Reading from it races with the client's reader.
func (c *Client) Conn() *websocket.Conn { return c.ws }

// Done is closed when the connection has ended.
func (c *Client) Done() <-chan struct{} { return c.done }

// CloseStatus returns the close code and reason the peer sent (-1 and the
// read error when it sent none). Valid after Done.
func (c *Client) CloseStatus() (websocket.StatusCode, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code, c.reason
}

// Close ends the connection and waits (bounded) for the read loop.
func (c *Client) Close() {
	c.Resume()
	_ = c.ws.CloseNow()
	select {
	case <-c.done:
	case <-time.After(closeWait):
	}
}
