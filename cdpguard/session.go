package cdpguard

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/browser"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/users"
)

// targetAttached keeps the guard's record of a target its root session's
// auto-attach reached (Target.attachedToTarget): its context, whether it
// is a page and the guard's session on it (the page registry,
// internal/pages, before any observer hears of it), and its setup, which
// releases it. It runs on the mux read loop.
func (g *Guard) targetAttached(e *cdpmsg.Envelope) {
	if e.SessionID != "" {
		return // only the root session's auto-attach is the guard's
	}
	if e.Attached == nil {
		g.log.Error("unreadable attachedToTarget")
		return
	}
	a := *e.Attached
	if a.TargetInfo.Type == "browser" {
		return // an agent's own browser session
	}
	g.pages.Track(a.TargetInfo.TargetID, a.TargetInfo.BrowserContextID)
	if a.TargetInfo.Type == "page" {
		// Marked before the tab cap counts the user's tabs, this one included.
		g.pages.MarkPage(a.TargetInfo.TargetID)
		if g.tabOverCap(a.TargetInfo, a.SessionID, a.WaitingForDebugger) { // closed at once, never released
			g.pages.SetupDone(a.TargetInfo.TargetID)
			return
		}
		g.pages.Attached(a.TargetInfo.TargetID, a.SessionID)
		g.pageAttached(a.TargetInfo.TargetID, a.SessionID)
	}
	g.markWeb(a.TargetInfo, false)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.setupTarget(a)
	}()
}

// targetChanged keeps the record of a target discovery reported, created
// (a new window: the controls' quiet window) or changed (a new URL).
func (g *Guard) targetChanged(e *cdpmsg.Envelope, created bool) {
	var p struct {
		TargetInfo targetInfo `json:"targetInfo"`
	}
	if jsonv2.Unmarshal(e.Params, &p) != nil {
		return
	}
	g.pages.Track(p.TargetInfo.TargetID, p.TargetInfo.BrowserContextID)
	g.markWeb(p.TargetInfo, !created)
	if p.TargetInfo.Type == "page" {
		g.pages.MarkPage(p.TargetInfo.TargetID)
		if created {
			g.ctl.WindowOpened()
		}
	}
}

// targetDestroyed ends the record of a target: its observers first, then
// the page registry, which keeps the target's context a while for late
// events.
func (g *Guard) targetDestroyed(e *cdpmsg.Envelope) {
	var p struct {
		TargetID string `json:"targetId"`
	}
	if jsonv2.Unmarshal(e.Params, &p) != nil {
		return
	}
	g.pageGone(p.TargetID)
	g.pages.Destroyed(p.TargetID)
}

// awaitSetup waits until the guard's setup of a target ended (the page
// registry keeps it: internal/pages).
func (g *Guard) awaitSetup(ctx context.Context, targetID string) error {
	return g.pages.AwaitSetup(ctx, targetID)
}

// setupTarget prepares a target the guard auto-attached and then releases
// it. Commands are written before the release, in order on this goroutine
// (Mux.Start), and awaited after it, because a waiting worker answers only
// once released. Written before, not merely sent from another goroutine:
// Chrome runs the controls script on a new document and reports
// Page.frameNavigated only once Page.enable is in effect, and a
// Page.enable that reached the renderer after the first document committed
// left the explanation page with no Allow button
// (docs/decisions/2026-12-02-allow-button.md). A page whose setup fails is
// closed: nothing runs unguarded.
func (g *Guard) setupTarget(a attachedToTarget) {
	defer g.pages.SetupDone(a.TargetInfo.TargetID)
	ctx, cancel := context.WithTimeout(g.ctx, 10*time.Second)
	defer cancel()
	type call struct {
		method string
		wait   func(context.Context) (jsonv2.Value, error)
	}
	var calls []call
	start := func(method string, params any) {
		calls = append(calls, call{method: method, wait: g.mux.Start(a.SessionID, method, params)})
	}
	if a.TargetInfo.Type == "page" {
		if g.attached && !a.WaitingForDebugger {
			// A document loaded before the guard came is not covered by
			// browser-level interception; page-level interception is.
			start("Fetch.enable", fetchdomain.EnableParams())
		}
		start("Page.enable", nil)
	}
	if a.WaitingForDebugger {
		if err := g.mux.Send(a.SessionID, "Runtime.runIfWaitingForDebugger", nil); err != nil {
			g.log.Debug("release failed", "target", a.TargetInfo.TargetID, "err", err)
		}
	}
	for _, c := range calls {
		if _, err := c.wait(ctx); err != nil {
			if g.ctx.Err() != nil {
				return
			}
			g.log.Error("guard setup failed; closing the target", "target", a.TargetInfo.TargetID, "type", a.TargetInfo.Type, "step", c.method, "err", err)
			_ = g.mux.Send("", "Target.closeTarget", map[string]any{"targetId": a.TargetInfo.TargetID})
			return
		}
	}
}

// targets lists the browser's targets.
func (g *Guard) targets(ctx context.Context) ([]targetInfo, error) {
	res, err := g.mux.Call(ctx, "", "Target.getTargets", nil)
	if err != nil {
		return nil, err
	}
	var r struct {
		TargetInfos []targetInfo `json:"targetInfos"`
	}
	if err := jsonv2.Unmarshal(res, &r); err != nil {
		return nil, err
	}
	return r.TargetInfos, nil
}

// onBlock counts a refused request and tells agents that asked.
func (g *Guard) onBlock(b fetchdomain.Block) {
	g.metrics.FetchBlocked.WithLabelValues(b.ResourceType).Inc()
	key, ok := g.users.OwnerKey(b.FrameID)
	g.logFetchBlock(b, key, ok)
	g.ctl.Blocked(b.FrameID, b.URL, b.Reason, b.TopLevel)
	if ok {
		g.notifyBlock(key, b)
	}
}

// notifyBlock sends Guard.requestBlocked to the connections of user key
// that sent Guard.enable. Other users never learn this user's URLs; a block
// the guard cannot tie to a user's tab (a worker, an out-of-process frame,
// a proxy refusal) is only logged and counted.
func (g *Guard) notifyBlock(key string, b fetchdomain.Block) {
	params, err := jsonv2.Marshal(b)
	if err != nil {
		return
	}
	g.agents.Notify(func(u *users.User) bool { return u.Key == key }, "Guard.requestBlocked", params)
}

func versionFromCDP(res []byte) browser.Version {
	var v struct {
		ProtocolVersion string `json:"protocolVersion"`
		Product         string `json:"product"`
		Revision        string `json:"revision"`
		UserAgent       string `json:"userAgent"`
		JSVersion       string `json:"jsVersion"`
	}
	_ = jsonv2.Unmarshal(res, &v)
	return browser.Version{Browser: v.Product, ProtocolVersion: v.ProtocolVersion, UserAgent: v.UserAgent, V8Version: v.JSVersion, WebKitVersion: v.Revision}
}
