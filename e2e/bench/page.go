package main

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// page is one tab driven over a flat session of a browser-level conn.
type page struct {
	c        *cdptest.Client
	targetID string
	session  string
}

// openPage creates a tab (in browserContextID, or where the endpoint puts
// it when empty), attaches to it and enables what Playwright and Puppeteer
// enable on every page: Page and Network, with the cache disabled.
func openPage(ctx context.Context, c *cdptest.Client, browserContextID string) (*page, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	params := map[string]any{"url": "about:blank"}
	if browserContextID != "" {
		params["browserContextId"] = browserContextID
	}
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := callInto(ctx, c, "", "Target.createTarget", params, &created); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := callInto(ctx, c, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	p := &page{c: c, targetID: created.TargetID, session: att.SessionID}
	for _, m := range []struct {
		method string
		params any
	}{
		{"Page.enable", nil},
		{"Network.enable", nil},
		{"Network.setCacheDisabled", map[string]any{"cacheDisabled": true}},
	} {
		if _, err := c.Call(ctx, p.session, m.method, m.params); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// createContext makes a fresh browser context, as cdpguard makes one per user.
func createContext(ctx context.Context, c *cdptest.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	var res struct {
		BrowserContextID string `json:"browserContextId"`
	}
	err := callInto(ctx, c, "", "Target.createBrowserContext", map[string]any{"disposeOnDetach": true}, &res)
	return res.BrowserContextID, err
}

// callInto calls method and decodes its result into out.
func callInto(ctx context.Context, c *cdptest.Client, session, method string, params, out any) error {
	res, err := c.Call(ctx, session, method, params)
	if err != nil {
		return err
	}
	if err := jsonv2.Unmarshal(res, out); err != nil {
		return fmt.Errorf("%s: decode result: %w", method, err)
	}
	return nil
}

// load navigates to url and returns the time from sending Page.navigate to
// the load event.
func (p *page) load(ctx context.Context, url string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	loaded, unsub := p.c.Subscribe(p.session, "Page.loadEventFired")
	defer unsub()
	start := time.Now()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := callInto(ctx, p.c, p.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return 0, err
	}
	if nav.ErrorText != "" {
		return 0, fmt.Errorf("navigate %s: %s", url, nav.ErrorText)
	}
	if _, err := p.c.Wait(ctx, loaded, "Page.loadEventFired"); err != nil {
		return 0, fmt.Errorf("load %s: %w", url, err)
	}
	return time.Since(start), nil
}

// eval evaluates expr (awaiting a promise) and decodes its value into out.
func (p *page) eval(ctx context.Context, expr string, out any) error {
	var res struct {
		Result struct {
			Value jsonv2.Value `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	err := callInto(ctx, p.c, p.session, "Runtime.evaluate", map[string]any{
		"expression": expr, "returnByValue": true, "awaitPromise": true,
	}, &res)
	if err != nil {
		return err
	}
	if d := res.ExceptionDetails; d != nil {
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		return fmt.Errorf("evaluate %.40q: %s", expr, msg)
	}
	if out == nil {
		return nil
	}
	if err := jsonv2.Unmarshal(res.Result.Value, out); err != nil {
		return fmt.Errorf("evaluate %.40q: decode value: %w", expr, err)
	}
	return nil
}

// close closes the tab, bounded.
func (p *page) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, _ = p.c.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": p.targetID})
}
