package headed

import (
	"context"
	"fmt"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// OpenPage creates a tab on c (Target.createTarget: through a guard it lands
// in the connection's user context), attaches to it, enables Page and
// navigates it to u, waiting for its load event. It returns the target and
// session ids.
func OpenPage(ctx context.Context, c *cdptest.Client, u string) (targetID, session string, err error) {
	v, err := c.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		return "", "", err
	}
	var ct struct {
		TargetID string `json:"targetId"`
	}
	if err := unmarshal(v, &ct); err != nil || ct.TargetID == "" {
		return "", "", fmt.Errorf("Target.createTarget: no targetId in %s (%v)", v, err)
	}
	if session, err = AttachPage(ctx, c, ct.TargetID); err != nil {
		return "", "", err
	}
	if _, err := c.Call(ctx, session, "Page.enable", nil); err != nil {
		return "", "", err
	}
	return ct.TargetID, session, Navigate(ctx, c, session, u)
}

// Navigate navigates session's page to u and waits for its load event
// (Page must be enabled on session).
func Navigate(ctx context.Context, c *cdptest.Client, session, u string) error {
	loaded, stop := c.Subscribe(session, "Page.loadEventFired")
	defer stop()
	v, err := c.Call(ctx, session, "Page.navigate", map[string]any{"url": u})
	if err != nil {
		return err
	}
	var r struct {
		ErrorText string `json:"errorText"`
	}
	if err := unmarshal(v, &r); err == nil && r.ErrorText != "" {
		return fmt.Errorf("navigate %s: %s", u, r.ErrorText)
	}
	_, err = c.Wait(ctx, loaded, "load of "+u)
	return err
}

// Eval evaluates expr in session's page (main world, promises awaited) and
// decodes its value into out.
func Eval(ctx context.Context, c *cdptest.Client, session, expr string, out any) error {
	v, err := c.Call(ctx, session, "Runtime.evaluate", map[string]any{
		"expression": expr, "awaitPromise": true, "returnByValue": true})
	if err != nil {
		return err
	}
	var r struct {
		Result struct {
			Value jsonv2.Value `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := unmarshal(v, &r); err != nil {
		return fmt.Errorf("decode Runtime.evaluate result: %w", err)
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("evaluate %q: exception: %s", expr, r.ExceptionDetails.Text)
	}
	if out == nil {
		return nil
	}
	return unmarshal(r.Result.Value, out)
}
