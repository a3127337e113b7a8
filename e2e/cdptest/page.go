package cdptest

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// OpenPage creates a page in the connection's default context, attaches to
// it (flat), enables Page and Runtime, and navigates it to u unless u is
// empty; it returns the target and session ids. The client must record
// events (Connect, or Options.Record).
func (c *Client) OpenPage(t testing.TB, u string) (targetID, sessionID string) {
	t.Helper()
	res, err := c.CallWithin("", "Target.createTarget", map[string]any{"url": "about:blank"}, 15*time.Second)
	if err != nil {
		t.Fatalf("createTarget: %v", err)
	}
	var ct struct {
		TargetID string `json:"targetId"`
	}
	_ = jsonv2.Unmarshal(res, &ct)
	res, err = c.CallWithin("", "Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, 15*time.Second)
	if err != nil {
		t.Fatalf("attachToTarget: %v", err)
	}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	_ = jsonv2.Unmarshal(res, &at)
	c.LoadPage(t, at.SessionID, u)
	return ct.TargetID, at.SessionID
}

// LoadPage enables Page and Runtime on a page's session and navigates it
// to u unless u is empty (OpenPage's last steps, for a page attached some
// other way).
func (c *Client) LoadPage(t testing.TB, session, u string) {
	t.Helper()
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		if _, err := c.CallWithin(session, m, nil, 10*time.Second); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	if u != "" {
		c.Navigate(t, session, u)
	}
}

// Navigate navigates the page of session and waits for its load event.
// The client must record events.
func (c *Client) Navigate(t testing.TB, session, u string) {
	t.Helper()
	c.mu.Lock()
	n := len(c.events)
	c.mu.Unlock()
	if _, err := c.CallWithin(session, "Page.navigate", map[string]any{"url": u}, 15*time.Second); err != nil {
		t.Fatalf("navigate %s: %v", u, err)
	}
	if _, ok := c.waitEventFrom(n, 15*time.Second, func(e Message) bool {
		return e.SessionID == session && e.Method == "Page.loadEventFired"
	}); !ok {
		t.Fatalf("navigate %s: no load event within 15s", u)
	}
}

// Eval evaluates expr (awaiting promises) on session and returns the value
// as JSON text; an exception is an error.
func (c *Client) Eval(session, expr string) (string, error) {
	res, err := c.CallWithin(session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, 10*time.Second)
	if err != nil {
		return "", err
	}
	var v struct {
		Result struct {
			Value jsonv2.Value `json:"value"`
		} `json:"result"`
		ExceptionDetails jsonv2.Value `json:"exceptionDetails"`
	}
	_ = jsonv2.Unmarshal(res, &v)
	if len(v.ExceptionDetails) > 0 {
		return "", fmt.Errorf("exception: %s", v.ExceptionDetails)
	}
	return string(v.Result.Value), nil
}

// ContextOf returns the browser context of a target, as the endpoint
// reports it.
func (c *Client) ContextOf(t testing.TB, targetID string) string {
	t.Helper()
	res, err := c.CallWithin("", "Target.getTargetInfo", map[string]any{"targetId": targetID}, 10*time.Second)
	var ti struct {
		TargetInfo struct {
			BrowserContextID string `json:"browserContextId"`
		} `json:"targetInfo"`
	}
	if err != nil || jsonv2.Unmarshal(res, &ti) != nil || ti.TargetInfo.BrowserContextID == "" {
		t.Fatalf("context of %s: %s %v", targetID, res, err)
	}
	return ti.TargetInfo.BrowserContextID
}
