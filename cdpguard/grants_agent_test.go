package cdpguard_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// grantAgent is one user's CDP connection with one tab.
type grantAgent struct {
	t       *testing.T
	c       *cdptest.Client
	target  string
	session string
}

func newGrantAgent(ctx context.Context, t *testing.T, g *cdpguard.Guard, user string) *grantAgent {
	t.Helper()
	hdr := http.Header{"X-Librechat-User": {user}}
	ws, err := cdptest.BrowserURL(ctx, g.URL(), hdr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cdptest.Dial(ctx, ws, cdptest.Options{Header: hdr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	a := &grantAgent{t: t, c: c}
	var created struct {
		TargetID string `json:"targetId"`
	}
	a.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	a.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached)
	a.target, a.session = created.TargetID, attached.SessionID
	a.call(ctx, a.session, "Page.enable", nil, nil)
	return a
}

// inNewContext creates a browser context on a's connection and returns an
// agent for a tab in it.
func (a *grantAgent) inNewContext(ctx context.Context) *grantAgent {
	a.t.Helper()
	var bc struct {
		BrowserContextID string `json:"browserContextId"`
	}
	a.call(ctx, "", "Target.createBrowserContext", map[string]any{}, &bc)
	var created struct {
		TargetID string `json:"targetId"`
	}
	a.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": bc.BrowserContextID}, &created)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	a.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached)
	b := &grantAgent{t: a.t, c: a.c, target: created.TargetID, session: attached.SessionID}
	b.call(ctx, b.session, "Page.enable", nil, nil)
	return b
}

func (a *grantAgent) call(ctx context.Context, session, method string, params, out any) {
	a.t.Helper()
	res, err := a.c.Call(ctx, session, method, params)
	if err != nil {
		a.t.Fatalf("%s: %v", method, err)
	}
	if out != nil {
		if err := jsonv2.Unmarshal(res, out); err != nil {
			a.t.Fatalf("%s: %v", method, err)
		}
	}
}

// navigate loads u in the agent's tab and returns the page's title.
func (a *grantAgent) navigate(ctx context.Context, u string) string {
	a.t.Helper()
	loads, stop := a.c.Subscribe(a.session, "Page.loadEventFired")
	defer stop()
	var r struct {
		ErrorText string `json:"errorText"`
	}
	a.call(ctx, a.session, "Page.navigate", map[string]any{"url": u}, &r)
	if r.ErrorText != "" {
		return "error " + r.ErrorText
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := a.c.Wait(wctx, loads, "load of "+u); err != nil {
		a.t.Fatal(err)
	}
	return a.eval(ctx, "document.title")
}

// eval evaluates expr (awaiting a promise) in the tab and returns it as a
// string.
func (a *grantAgent) eval(ctx context.Context, expr string) string {
	a.t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	a.call(ctx, a.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		a.t.Fatalf("evaluate %s: %v", expr, r.ExceptionDetails)
	}
	s, _ := r.Result.Value.(string)
	return s
}

func (a *grantAgent) guardPolicy(ctx context.Context) policyGrants {
	a.t.Helper()
	var p policyGrants
	a.call(ctx, "", "Guard.getPolicy", nil, &p)
	if p.Grants == nil {
		a.t.Fatal("Guard.getPolicy has no grants list")
	}
	return p
}

// waitBlocked reports whether a Guard.requestBlocked event for url comes
// on ch within a second.
func waitBlocked(ctx context.Context, c *cdptest.Client, ch <-chan jsonv2.Value, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for {
		v, err := c.Wait(ctx, ch, "Guard.requestBlocked")
		if err != nil {
			return false
		}
		var b struct {
			URL          string `json:"url"`
			ResourceType string `json:"resourceType"`
		}
		if jsonv2.Unmarshal(v, &b) == nil && b.URL == url && b.ResourceType == "Connection" {
			return true
		}
	}
}
