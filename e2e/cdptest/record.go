package cdptest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// Connect dials the browser endpoint of the guard at base (http://host:port)
// as user (sent in cdpguard.DefaultSessionHeader), recording every event,
// and closes the connection when t ends.
func Connect(t testing.TB, base, user string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := http.Header{cdpguard.DefaultSessionHeader: {user}}
	ws, err := BrowserURL(ctx, base, h)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(ctx, ws, Options{Header: h, Record: true})
	if err != nil {
		t.Fatalf("dial %s as %s: %v", ws, user, err)
	}
	t.Cleanup(c.Close)
	return c
}

// CallWithin is Call bounded by d.
func (c *Client) CallWithin(session, method string, params any, d time.Duration) (jsonv2.Value, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Call(ctx, session, method, params)
}

// Events returns the events received so far (Options.Record).
func (c *Client) Events() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Message(nil), c.events...)
}

// EventsText returns the events received so far, one a line.
func (c *Client) EventsText() string {
	var b strings.Builder
	for _, e := range c.Events() {
		fmt.Fprintf(&b, "%s %s %s\n", e.SessionID, e.Method, e.Params)
	}
	return b.String()
}

// WaitEvent waits up to d for an event, received before or after the
// call, for which ok is true (Options.Record).
func (c *Client) WaitEvent(d time.Duration, ok func(Message) bool) (Message, bool) {
	return c.waitEventFrom(0, d, ok)
}

// waitEventFrom is WaitEvent over the events from index seen on.
func (c *Client) waitEventFrom(seen int, d time.Duration, ok func(Message) bool) (Message, bool) {
	deadline := time.Now().Add(d)
	for {
		c.mu.Lock()
		evs := c.events[min(seen, len(c.events)):]
		seen = len(c.events)
		c.mu.Unlock()
		for _, e := range evs {
			if ok(e) {
				return e, true
			}
		}
		if time.Now().After(deadline) {
			return Message{}, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
