// Package targets keeps the guard's record of the browser's targets as
// Chrome reports them on the guard's root session: each target's context,
// page and web-content marks go to the page registry (internal/pages), a
// page's arrival to the page observers (its end is the registry's, which
// ends the records the features keep on the page), and every target the
// auto-attach reached is set up (interception, Page.enable) before it is
// released. It also knows the browser's own target id. It runs on the
// relay's read loop and never sends from it: the sends it decides there go
// through the outbox (internal/outbox) or a setup goroutine the guard owns.
package targets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Browser is the guard's browser connection (relay.Mux): Start writes a
// command in order and waits for its reply later, Send does not wait.
type Browser interface {
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
	Start(sessionID, method string, params any) (wait func(context.Context) (jsonv2.Value, error))
	Send(sessionID, method string, params any) error
}

// Owners is the users registry as the record's logs name a target's user.
type Owners interface {
	// OwnerKey returns the user key of a target.
	OwnerKey(targetID string) (string, bool)
}

// Pages is the page registry (internal/pages) as the record feeds it.
type Pages interface {
	Track(targetID, contextID string)
	MarkPage(targetID string)
	MarkWeb(targetID, why string)
	Attached(targetID, sessionID string)
	Destroyed(targetID string)
	SetupDone(targetID string)
	AwaitSetup(ctx context.Context, targetID string) error
	// Ensure returns the target's page, which holds its setup under way.
	Ensure(targetID string) *pages.Page
}

// Guard is the guard's side of the record: the tab caps, which span the
// users and their isolation, and the page observers (the dialogs, the
// controls), which the guard tells of a page's arrival.
type Guard interface {
	// OverTabs returns the user of a browser context when a new tab there
	// took that user past its tab cap, or all users past theirs, and the
	// cap's refusal (an *isolation.CapError or a *users.CapError); nil
	// when not.
	OverTabs(contextID string) (u *users.User, refused error)
	// PageAttached tells the page observers of a page that got the
	// guard's session; its end is the page registry's (Destroyed), which
	// ends the records the features keep on the page.
	PageAttached(targetID, sessionID string)
	// WindowOpened is told of a new page (the controls' quiet window).
	WindowOpened()
}

// Agents is the guard's agent connections (internal/admission).
type Agents interface {
	// NotifyUser tells u's connections that sent Guard.enable.
	NotifyUser(u *users.User, method string, params []byte)
	// Evict ends every agent session on a target with a reason.
	Evict(targetID, reason string)
}

// Life runs the record's setups on goroutines the guard's Close waits
// for.
type Life interface {
	Go(f func())
}

// Outbox runs f off the read loop, in order (internal/outbox).
type Outbox interface {
	Add(f func())
}

// Caps counts a cap that closed a target (internal/bounds).
type Caps interface {
	Capped(cap string)
}

// Counter counts one thing (a prometheus.Counter).
type Counter interface {
	Inc()
}

// Deps are what the record takes from the guard.
type Deps struct {
	Browser Browser
	Pages   Pages
	Guard   Guard
	Agents  Agents
	// Ctx ends when the guard closes: setups end with it.
	Ctx    context.Context
	Life   Life
	Outbox Outbox
	// Attach is attach mode, where a page already loaded before the guard
	// came needs page-level interception.
	Attach bool
	// Owners tells the user of a target, for logs (internal/users).
	Owners Owners
	// Caps counts a cap that closed a target; Crashes a crashed renderer.
	Caps    Caps
	Crashes Counter
	Log     *slog.Logger
}

// Record is the guard's record of the browser's targets.
type Record struct {
	d       Deps
	browser atomic.Pointer[string] // the browser's own target id (browser.go)

	// setups holds each target's setup under way on its page; the page's
	// end (Target.targetDestroyed) ends the setup's wait.
	setups *pages.Slot[*running]
	mu     sync.Mutex // a replaced setup's end against the new one's start

	enforceBound, slowAfter time.Duration
}

// New returns a record fed by the guard's root session's target events.
func New(d Deps) *Record {
	return &Record{d: d, setups: pages.NewSlot(func(_ *pages.Page, run *running) { run.cancel() }), enforceBound: enforceBound, slowAfter: slowAfter}
}

// Attached keeps the record of a target the root session's auto-attach
// reached (Target.attachedToTarget): its context, whether it is a page and
// the guard's session on it (the page registry, before any observer hears
// of the page), and its setup, which releases it.
func (r *Record) Attached(e *cdpmsg.Envelope) {
	if e.SessionID != "" {
		return // only the root session's auto-attach is the guard's
	}
	if e.Attached == nil {
		r.d.Log.Error("unreadable attachedToTarget")
		return
	}
	a := *e.Attached
	t := a.TargetInfo
	if t.Type == "browser" {
		return // an agent's own browser session
	}
	r.d.Pages.Track(t.TargetID, t.BrowserContextID)
	if t.Type == "page" {
		// Marked before the tab cap counts the user's tabs, this one included.
		r.d.Pages.MarkPage(t.TargetID)
		if r.overCap(t, a.SessionID, a.WaitingForDebugger) { // closed at once, never released
			r.d.Pages.SetupDone(t.TargetID)
			return
		}
		r.d.Pages.Attached(t.TargetID, a.SessionID)
		r.d.Guard.PageAttached(t.TargetID, a.SessionID)
	}
	r.markWeb(t, false)
	// The setup's wait ends with the target: registered here, on the read
	// loop, so that a Target.targetDestroyed read after this event ends it.
	ctx, cancel := context.WithCancel(r.d.Ctx)
	run := &running{cancel: cancel}
	pg := r.d.Pages.Ensure(t.TargetID)
	r.mu.Lock()
	if old, ok := r.setups.Get(pg); ok {
		old.cancel()
	}
	r.setups.Set(pg, run)
	r.mu.Unlock()
	r.d.Life.Go(func() {
		defer r.endSetup(pg, run)
		r.setup(ctx, a)
	})
}

// running is one target's setup under way: cancel ends its wait.
type running struct{ cancel context.CancelFunc }

// endSetup forgets run, unless a newer setup of the same target replaced
// it, and ends its context.
func (r *Record) endSetup(pg *pages.Page, run *running) {
	r.mu.Lock()
	if cur, ok := r.setups.Get(pg); ok && cur == run {
		r.setups.Delete(pg)
	}
	r.mu.Unlock()
	run.cancel()
}

// Changed keeps the record of a target discovery reported, created (a new
// window: the controls' quiet window) or changed (a new URL).
func (r *Record) Changed(e *cdpmsg.Envelope, created bool) {
	var p struct {
		TargetInfo cdpmsg.TargetInfo `json:"targetInfo"`
	}
	if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil {
		return
	}
	r.d.Pages.Track(p.TargetInfo.TargetID, p.TargetInfo.BrowserContextID)
	r.markWeb(p.TargetInfo, !created)
	if p.TargetInfo.Type == "page" {
		r.d.Pages.MarkPage(p.TargetInfo.TargetID)
		if created {
			r.d.Guard.WindowOpened()
		}
	}
}

// Destroyed ends the record of a target in the page registry, which keeps
// the target's context a while for late events and ends the page's
// records (the wait of its setup under way, setups; the features' own).
func (r *Record) Destroyed(e *cdpmsg.Envelope) {
	var p struct {
		TargetID string `json:"targetId"`
	}
	if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil {
		return
	}
	r.d.Pages.Destroyed(p.TargetID)
}

// Crashed closes a tab whose renderer crashed (Target.targetCrashed): a
// crashed tab serves nobody, and closing it tells the agents attached to
// it (Target.detachedFromTarget, Target.targetDestroyed) instead of leaving
// them waiting. The rest of the browser keeps running.
func (r *Record) Crashed(e *cdpmsg.Envelope) {
	var p struct {
		TargetID  string `json:"targetId"`
		Status    string `json:"status"`
		ErrorCode int    `json:"errorCode"`
	}
	if err := cdpmsg.UnmarshalBrowser(e.Params, &p); err != nil || p.TargetID == "" {
		r.d.Log.Error("unreadable Target.targetCrashed", "err", err)
		return
	}
	r.d.Crashes.Inc()
	user, _ := r.d.Owners.OwnerKey(p.TargetID)
	r.d.Log.Warn("renderer crashed; closing the tab", "target", p.TargetID, "user", clip.String(user), "status", p.Status, "errorCode", p.ErrorCode)
	r.d.Outbox.Add(func() { _ = r.d.Browser.Send("", "Target.closeTarget", map[string]any{"targetId": p.TargetID}) })
}

// markWeb records whether a target is web content (firewall.NotWeb). When
// a target an agent holds a session on turns into something else (a tab
// navigated to chrome://settings by a page's own link, say), changed is
// true and every agent session on it is ended with the reason.
func (r *Record) markWeb(t cdpmsg.TargetInfo, changed bool) {
	if t.Type == "browser" {
		return
	}
	why := firewall.NotWeb(t.Type, t.URL)
	r.d.Pages.MarkWeb(t.TargetID, why)
	r.d.Log.Debug("target", "id", t.TargetID, "type", t.Type, "url", clip.String(t.URL), "context", t.BrowserContextID, "notWeb", why)
	if why == "" || !changed {
		return
	}
	reason := cdpmsg.Refusal("", fmt.Sprintf("target %s is no longer web content (%s %s): %s", t.TargetID, why, clip.String(t.URL), firewall.WhyNotWeb))
	id := t.TargetID
	r.d.Outbox.Add(func() { r.d.Agents.Evict(id, reason) })
}

// overCap closes a page that took its user past the tab cap (a popup, or
// creates that raced past the command check), tells the user's connections
// that sent Guard.enable (Guard.targetRefused), logs and counts it. session
// is the guard's session to it, waiting whether it is held there. It
// reports whether the page was closed.
func (r *Record) overCap(t cdpmsg.TargetInfo, session string, waiting bool) bool {
	u, err := r.d.Guard.OverTabs(t.BrowserContextID)
	if u == nil || err == nil {
		return false
	}
	capName := isolation.CapTabs
	if ue, ok := errors.AsType[*users.CapError](err); ok {
		capName = ue.Cap
	}
	r.d.Caps.Capped(capName)
	r.d.Log.Warn("tab over a tab cap closed", "user", clip.String(u.Key), "target", t.TargetID, "opener", t.OpenerID, "cap", err.Error())
	id := t.TargetID
	r.d.Outbox.Add(func() {
		_ = r.d.Browser.Send("", "Target.closeTarget", map[string]any{"targetId": id})
		if session != "" && waiting {
			// A popup can share its opener's renderer: held, it would
			// hold the opener too, and the close waits on it.
			_ = r.d.Browser.Send(session, "Runtime.runIfWaitingForDebugger", nil)
		}
	})
	params, jerr := jsonv2.Marshal(map[string]string{
		"targetId": t.TargetID, "openerId": t.OpenerID, "url": t.URL,
		"reason": "cdpguard: closed at once: " + err.Error(),
	})
	if jerr == nil {
		r.d.Agents.NotifyUser(u, "Guard.targetRefused", params)
	}
	return true
}

// enforceBound bounds the setup steps that enforcement depends on (the
// page-level interception of a page already running in attach mode): one
// that has not answered in time closes the target. slowAfter is when a
// setup still waiting on Page.enable is logged as slow. (Record's fields
// of the same names are these; tests shorten them.)
const (
	enforceBound = 10 * time.Second
	slowAfter    = 10 * time.Second
)

// setup prepares a target the guard auto-attached and then releases it.
// Commands are written before the release, in order on this goroutine
// (Mux.Start), and awaited after it, because a waiting worker answers only
// once released. Written before, not merely sent from another goroutine:
// Chrome runs the controls script on a new document and reports
// Page.frameNavigated only once Page.enable is in effect, and a
// Page.enable that reached the renderer after the first document committed
// left the explanation page with no Allow button
// (docs/decisions/2026-12-02-allow-button.md).
//
// A step the browser refuses closes the page: nothing runs unguarded. A
// slow browser does not: Page.enable (the controls and frame events, not
// enforcement: browser-level Fetch covers every request of a launched
// browser) is awaited for as long as it takes, until the target ends (ctx,
// ended by Destroyed) or the browser connection does; only page-level
// interception in attach mode, which is enforcement, keeps a bound
// (docs/decisions/2026-12-07-slow-setup.md).
func (r *Record) setup(ctx context.Context, a cdpmsg.Attached) {
	t := a.TargetInfo
	defer r.d.Pages.SetupDone(t.TargetID)
	type call struct {
		method  string
		enforce bool
		wait    func(context.Context) (jsonv2.Value, error)
	}
	var calls []call
	start := func(method string, enforce bool, params any) {
		calls = append(calls, call{method: method, enforce: enforce, wait: r.d.Browser.Start(a.SessionID, method, params)})
	}
	if t.Type == "page" {
		if r.d.Attach && !a.WaitingForDebugger {
			// A document loaded before the guard came is not covered by
			// browser-level interception; page-level interception is.
			start("Fetch.enable", true, fetchdomain.EnableParams())
		}
		start("Page.enable", false, nil)
	}
	if a.WaitingForDebugger {
		if err := r.d.Browser.Send(a.SessionID, "Runtime.runIfWaitingForDebugger", nil); err != nil {
			r.d.Log.Debug("release failed", "target", t.TargetID, "err", err)
		}
	}
	began := time.Now()
	for _, c := range calls {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		var slow *time.Timer
		if c.enforce {
			wctx, cancel = context.WithTimeout(ctx, r.enforceBound)
		} else {
			slow = time.AfterFunc(r.slowAfter, func() {
				r.d.Log.Warn("guard setup slow; still waiting, the tab stays open", "target", t.TargetID, "step", c.method, "after", r.slowAfter)
			})
		}
		_, err := c.wait(wctx)
		cancel()
		if slow != nil && !slow.Stop() {
			r.d.Log.Info("guard setup done after a slow step", "target", t.TargetID, "step", c.method, "took", time.Since(began).Round(time.Millisecond), "err", err)
		}
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return // the guard closed, or the target ended
		}
		r.d.Log.Error("guard setup failed; closing the target", "target", t.TargetID, "type", t.Type, "step", c.method, "err", err)
		_ = r.d.Browser.Send("", "Target.closeTarget", map[string]any{"targetId": t.TargetID})
		return
	}
}

// List lists the browser's targets (Target.getTargets).
func (r *Record) List(ctx context.Context) ([]cdpmsg.TargetInfo, error) {
	res, err := r.d.Browser.Call(ctx, "", "Target.getTargets", nil)
	if err != nil {
		return nil, err
	}
	var l struct {
		TargetInfos []cdpmsg.TargetInfo `json:"targetInfos"`
	}
	if err := cdpmsg.UnmarshalBrowser(res, &l); err != nil {
		return nil, err
	}
	return l.TargetInfos, nil
}

// AwaitPages waits until the guard's setup of every page open now ended:
// at start-up, nothing is served before the pages that were there are
// covered.
func (r *Record) AwaitPages(ctx context.Context) error {
	ts, err := r.List(ctx)
	if err != nil {
		return err
	}
	for _, t := range ts {
		if t.Type != "page" {
			continue
		}
		if err := r.d.Pages.AwaitSetup(ctx, t.TargetID); err != nil {
			return err
		}
	}
	return nil
}
