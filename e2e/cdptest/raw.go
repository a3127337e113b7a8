package cdptest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// WriteFrame writes one frame exactly as given (malformed JSON, binary
// frames, ids of the caller's choosing); answers reach only OnMessage and
// the inbox (Options.Inbox).
func (c *Client) WriteFrame(typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.ws.Write(ctx, typ, b)
}

// Next returns the next frame of the inbox (Options.Inbox), or ok=false
// when the connection closed and the inbox is empty, or d passed.
func (c *Client) Next(d time.Duration) (Message, bool) {
	select {
	case m := <-c.inbox:
		return m, true
	case <-c.done:
		select {
		case m := <-c.inbox:
			return m, true
		default:
		}
		return Message{}, false
	case <-time.After(d):
		return Message{}, false
	}
}

// CallID sends a command with the caller's id and waits up to d for its
// answer in the inbox (Options.Inbox), skipping other frames. A CDP error
// answer is returned with an error naming the method.
func (c *Client) CallID(d time.Duration, id int, session, method string, params any) (Message, error) {
	cmd := map[string]any{"id": id, "method": method}
	if session != "" {
		cmd["sessionId"] = session
	}
	if params != nil {
		cmd["params"] = params
	}
	b, err := jsonv2.Marshal(cmd)
	if err == nil {
		err = c.WriteFrame(websocket.MessageText, b)
	}
	if err != nil {
		return Message{}, err
	}
	deadline := time.Now().Add(d)
	for {
		m, ok := c.Next(time.Until(deadline))
		if !ok {
			code, reason := c.CloseStatus()
			return Message{}, fmt.Errorf("%s: no reply within %v (closed: %d %q)", method, d, code, reason)
		}
		if string(m.RawID) == strconv.Itoa(id) {
			if m.Error != nil {
				return m, fmt.Errorf("%s: %s", method, m.Error.Message)
			}
			return m, nil
		}
	}
}

// Stalled is closed when the client stopped reading (Options.Stall).
func (c *Client) Stalled() <-chan struct{} { return c.stalled }

// Resume makes a stalled client read again (and is a no-op otherwise).
func (c *Client) Resume() { c.resumeMu.Do(func() { close(c.resume) }) }

// DialUser connects to the browser WebSocket URL wsURL as user (sent in
// cdpguard.DefaultSessionHeader), with an inbox of every frame (Next,
// CallID), and closes the connection when t ends.
func DialUser(t testing.TB, wsURL, user string, o Options) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o.Header = http.Header{cdpguard.DefaultSessionHeader: {user}}
	if o.Inbox == 0 {
		o.Inbox = 1 << 15
	}
	c, err := Dial(ctx, wsURL, o)
	if err != nil {
		t.Fatalf("dial %s: %v", wsURL, err)
	}
	t.Cleanup(c.Close)
	return c
}
