// Package controls is the guard's in-page UI for a human (Config.Controls):
// a badge and panel in a hidden isolated world of every page, and the
// "Allow <host> for this session" button on the explanation page of a
// blocked main-frame navigation. State flows one way, from the guard into
// the world (one push loop, Run); the only way back is the world's binding,
// whose calls are checked (grant.go) before a host is granted. Because CDP
// input is trusted by the page, the controls also follow every agent
// command that could stand in for a human's click or reach their world
// (agents.go, the firewall table's controls column) and refuse a grant
// while one might have (docs/decisions/2026-12-01-controls.md,
// 2026-12-01-controls-red-team.md, 2026-12-01-controls-world-race.md,
// 2026-12-02-controls-contexts.md).
//
// Events observed, on the guard's own page sessions (the On* observers,
// FrameNavigated): Runtime.executionContextCreated,
// Runtime.executionContextDestroyed, Runtime.executionContextsCleared,
// Runtime.bindingCalled, Page.frameNavigated; and, from the guard's wiring,
// a page's attachment (SetupPage), a page target's creation (WindowOpened),
// a blocked request (Blocked) and a dialog the guard answered
// (DialogAnswered). Each page's state is a record on its page in the page
// registry (internal/pages): the page's end (Target.targetDestroyed)
// forgets it.
//
// A nil *Controls is the controls switched off: every method is safe on it
// and does nothing, except that AgentCommand still keeps the guard's own
// scripts out of Debugger.getScriptSource replies.
package controls

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"
	cdptarget "github.com/chromedp/cdproto/target"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/quiet"
	"github.com/cdpguard/cdpguard/js"
)

// pushEvery throttles what the guard pushes into a page's controls world:
// at most one update per page this often.
const pushEvery = 150 * time.Millisecond

// recentBlocks is how many blocks of a page the panel lists.
const recentBlocks = 20

// pushRetries bounds the retries of a failed push into one context: a
// context that is gone fails for good, and its successor is pushed anew.
const pushRetries = 5

// Caller is the guard's browser connection.
type Caller interface {
	// Call sends a command and waits for its reply.
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
	// Send writes a command without waiting for its reply.
	Send(sessionID, method string, params any) error
}

// Worlds records the guard's isolated worlds, which agents may not name.
type Worlds interface {
	// MadeIn records a guard world's context in a frame of page target.
	MadeIn(target cdptarget.ID, frameID cdp.FrameID, contextID runtime.ExecutionContextID)
}

// Grants are the per-user session grants a click on "Allow" makes.
type Grants interface {
	// GrantHost grants host to the user of target's page for the session
	// and returns the user's key.
	GrantHost(target, host, via string) (user string, err error)
	// Grantable returns why no grant can cover host on target's page, nil
	// when one can.
	Grantable(target, host string) error
	// Reachable lists what target's page may reach (the allowlist's origins
	// and the hosts granted), for the panel.
	Reachable(target string) []string
}

// Pages places the guard's page sessions and subframes
// (internal/pages.Registry). Its lock is a leaf: it is asked under
// Controls.mu.
type Pages interface {
	// TargetOf returns the page target of the guard's session.
	TargetOf(sessionID string) (targetID string, ok bool)
	// PageOf returns the page target of a subframe, "" when unknown.
	PageOf(frameID string) string
	// Page returns the page of a target, which holds the controls' state
	// of it; Ensure makes it for a page being set up.
	Page(targetID string) *pages.Page
	Ensure(targetID string) *pages.Page
}

// Owners tells the user of a page.
type Owners interface {
	// OwnerKey returns the user key of target's page; known is false when
	// the page is no user's (a human's own tab).
	OwnerKey(target string) (user string, known bool)
}

// Deps is what the controls need from the guard.
type Deps struct {
	Browser Caller
	Worlds  Worlds
	Grants  Grants
	// World is the controls world's name: random, starting with
	// firewall.ReservedPrefix, hidden from agents.
	World string
	// Pages places the guard's page sessions and subframes.
	Pages Pages
	// Owners tells the user of a page (internal/users).
	Owners Owners
	// ExplainBlocked is true when a blocked main-frame navigation is
	// answered with the explanation page (the only page with a button).
	ExplainBlocked bool
	// Go runs f in a goroutine its owner waits for before it ends.
	Go  func(f func())
	Log *slog.Logger
}

// Controls is the controls of one guard. Build it with New; nil is off.
type Controls struct {
	d       Deps
	ctx     context.Context // ends the push loop and bounds grants' reloads
	binding string          // the binding's random name, exposed in the controls world only
	input   quiet.Tracker   // agents' input, debugger and window moves (internal/quiet)
	taint   worldTaint      // controls contexts agents may have reached (taint.go)
	dbg     debuggers       // agents' debugger sessions, on their pages (debuggers.go)
	wake    chan struct{}

	// recs holds each page's state on the page (internal/pages), its
	// taints too; the page's end forgets it.
	recs *pages.Slot[*page]
	mu   sync.Mutex // before dbg.mu and the Deps' own locks (Pages, recs)
}

// page is what the guard knows and shows about one page target.
type page struct {
	session string
	dirty   bool   // changed since the last push
	ctxID   int64  // the controls world's context in the main frame; 0: none yet
	ctxUniq string // ctxID's uniqueId; "" when it was recovered (recover.go)
	// worlds holds every controls context of the target by id, each with
	// its frame and uniqueIds (contexts.go).
	worlds map[int64]*world
	// tainted lists the controls contexts agents may have reached
	// (taint.go): their binding calls are refused.
	tainted []int64
	recover recovery // asking Chrome for a lost main-frame context
	blocked int
	recent  []block
	explain *explained
	note    string
	// lastRefusal is when a refused grant was last logged at warning level.
	lastRefusal time.Time
	// failedPushes counts pushes in a row that failed into ctxID (a busy
	// renderer timing out): retried up to pushRetries times.
	failedPushes int
	// notDrawn is set when a push into ctxID drew nothing (repair.go);
	// repaired names the context last repaired.
	notDrawn bool
	repaired ctxKey
}

func newPage(session string) *page {
	return &page{session: session, worlds: map[int64]*world{}}
}

// world is one controls context id of a page: its frame, and the
// uniqueIds of the live contexts with that id. Context ids are small
// integers per renderer process: across a process swap the old process's
// late executionContextDestroyed can carry the id of the new document's
// context, and only the uniqueId tells them apart. A recovered context
// (recover.go) has none.
type world struct {
	frame string
	uniqs []string
}

// block is one line of the panel.
type block struct {
	Host   string `json:"host"`
	Reason string `json:"reason"`
}

// explained is a main-frame navigation the guard answered with the
// explanation page: the only thing a grant can be for.
type explained struct {
	url       string
	host      string
	committed bool // the explanation page is the frame's current document
	// contextAfter: a main-frame controls context was created after the
	// block was answered (a new document); repair.go commits only then.
	contextAfter bool
	granted      bool
	refused      int
	busy         bool // a grant is being made
}

// state is what the world draws (js/controls.js).
type state struct {
	Blocked int            `json:"blocked"`
	Recent  []block        `json:"recent"`
	Origins []string       `json:"origins"`
	Explain *explainedView `json:"explain"`
	Note    string         `json:"note"`
	Binding string         `json:"binding"`
}

type explainedView struct {
	Host    string `json:"host"`
	Granted bool   `json:"granted"`
	Refused int    `json:"refused"`
	// NoGrant says why no grant can cover Host (drawn instead of the
	// button); "" when one can.
	NoGrant string `json:"noGrant,omitempty"`
}

// New builds the controls; ctx ends them (Run returns, reloads after a
// grant are cut short).
func New(ctx context.Context, d Deps) *Controls {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	c := &Controls{
		d:       d,
		ctx:     ctx,
		binding: firewall.ReservedPrefix + hex.EncodeToString(b),
		wake:    make(chan struct{}, 1),
		dbg:     newDebuggers(),
	}
	c.recs = pages.NewSlot[*page](nil)
	return c
}

// rec returns page target's state, nil when the controls do not know the
// page. The caller holds c.mu.
func (c *Controls) rec(target string) *page {
	p, _ := c.recs.Get(c.d.Pages.Page(target))
	return p
}

// World returns the controls world's name ("" when off).
func (c *Controls) World() string {
	if c == nil {
		return ""
	}
	return c.d.World
}

// Session returns the guard's session to page target, "" when the
// controls do not know the page.
func (c *Controls) Session(target string) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.rec(target); p != nil {
		return p.session
	}
	return ""
}

// SetupPage installs the controls on the guard's new session to a page.
// The commands are written in order before the page is released, so the
// binding and the script are in place for its first document; their
// replies are not awaited (controls are UI: a page whose controls failed is
// still guarded). runImmediately covers documents already loaded when the
// guard attached.
func (c *Controls) SetupPage(targetID, session string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.recs.LoadOrStore(c.d.Pages.Ensure(targetID), newPage(session))
	c.mu.Unlock()
	for _, cmd := range []struct {
		method string
		params any
	}{
		{"Runtime.addBinding", map[string]any{"name": c.binding, "executionContextName": c.d.World}},
		{"Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": js.Controls, "worldName": c.d.World, "runImmediately": true}},
		{"Runtime.enable", nil},
	} {
		if err := c.d.Browser.Send(session, cmd.method, cmd.params); err != nil {
			c.d.Log.Debug("controls setup failed", "target", targetID, "step", cmd.method, "err", err)
			return
		}
	}
}

// OnContextCreated, OnContextDestroyed, OnContextsCleared, OnBindingCalled
// and OnFrameNavigated take the guard's page-session events the controls
// follow (Runtime.executionContextCreated, executionContextDestroyed,
// executionContextsCleared, bindingCalled, Page.frameNavigated), each
// routed here by the event table (cdpguard/events.go). They run on the
// browser connection's read loop and never block.
func (c *Controls) OnContextCreated(e *cdpmsg.Envelope) {
	if c == nil {
		return
	}
	var p struct {
		Context struct {
			ID       int64  `json:"id"`
			UniqueID string `json:"uniqueId"`
			Name     string `json:"name"`
			AuxData  struct {
				FrameID string `json:"frameId"`
			} `json:"auxData"`
		} `json:"context"`
	}
	if !strings.Contains(string(e.Params), c.d.World) || cdpmsg.UnmarshalBrowser(e.Params, &p) != nil || p.Context.Name != c.d.World {
		return
	}
	c.contextCreated(e.SessionID, p.Context.AuxData.FrameID, p.Context.ID, p.Context.UniqueID)
}

// OnContextDestroyed: see OnContextCreated.
func (c *Controls) OnContextDestroyed(e *cdpmsg.Envelope) {
	if c == nil {
		return
	}
	var p struct {
		ID       int64  `json:"executionContextId"`
		UniqueID string `json:"executionContextUniqueId"`
	}
	if cdpmsg.UnmarshalBrowser(e.Params, &p) == nil {
		c.contextDestroyed(e.SessionID, p.ID, p.UniqueID)
	}
}

// OnContextsCleared: see OnContextCreated.
func (c *Controls) OnContextsCleared(e *cdpmsg.Envelope) {
	if c == nil {
		return
	}
	c.contextGone(e.SessionID, func(int64, string) bool { return true })
}

// OnBindingCalled: see OnContextCreated.
func (c *Controls) OnBindingCalled(e *cdpmsg.Envelope) {
	if c == nil {
		return
	}
	c.bindingCalled(e.SessionID, e.Params)
}

// OnFrameNavigated: see OnContextCreated; FrameNavigated does the work.
func (c *Controls) OnFrameNavigated(e *cdpmsg.Envelope) {
	if c == nil {
		return
	}
	var p struct {
		Frame struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		} `json:"frame"`
	}
	if cdpmsg.UnmarshalBrowser(e.Params, &p) == nil && p.Frame.ID != "" {
		c.FrameNavigated(e.SessionID, p.Frame.ID, p.Frame.URL)
	}
}

// FrameNavigated (Page.frameNavigated on the guard's page session) starts
// a page's count afresh on a new main-frame document and keeps the
// explained block only if the new document is its explanation page. The
// guard's worlds of the frame were just forgotten: the live controls
// contexts are recorded again, since the new document's may have been
// reported before the navigation.
func (c *Controls) FrameNavigated(session, frameID, frameURL string) {
	if c == nil {
		return
	}
	target, _ := c.d.Pages.TargetOf(session)
	c.mu.Lock()
	p := c.rec(target)
	if p == nil {
		c.mu.Unlock()
		return
	}
	var live []int64
	for id, w := range p.worlds {
		if w.frame == frameID {
			live = append(live, id)
		}
	}
	if frameID == target {
		p.recover.navigated()
		if p.ctxID != 0 && p.ctxUniq == "" {
			// A recovered context is the previous document's.
			if id := p.ctxID; p.worlds[id] == nil || len(p.worlds[id].uniqs) == 0 {
				delete(p.worlds, id)
				p.untaint(func(i int64) bool { return i == id })
			}
			p.ctxID = 0
		}
		p.blocked, p.recent, p.note = 0, nil, ""
		if x := p.explain; x != nil {
			if x.url == frameURL && !x.committed {
				p.commit()
			} else {
				p.explain = nil
			}
		}
		p.dirty = true
	}
	c.mu.Unlock()
	for _, id := range live {
		c.d.Worlds.MadeIn(cdptarget.ID(target), cdp.FrameID(frameID), runtime.ExecutionContextID(id))
	}
	c.poke()
}

// commit makes the page's explained block its current document: the
// explanation page, with its one block on the panel.
func (p *page) commit() {
	p.explain.committed = true
	p.blocked = 1
	p.recent = []block{{Host: p.explain.host, Reason: "not on the allowlist (this page)"}}
}

// Blocked counts a refused request of frameID on its page; a main-frame
// navigation (topLevel) answered with the explanation page is recorded as
// explained.
func (c *Controls) Blocked(frameID, rawURL, reason string, topLevel bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	target := frameID
	p := c.rec(target)
	if p == nil {
		target = c.d.Pages.PageOf(frameID) // a subframe
		p = c.rec(target)
	}
	if p == nil {
		return
	}
	host := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	if topLevel && target == frameID && c.d.ExplainBlocked {
		p.explain = &explained{url: rawURL, host: host}
		return // counted when its page commits (FrameNavigated)
	}
	p.blocked++
	p.recent = append(p.recent, block{Host: host, Reason: reason})
	if len(p.recent) > recentBlocks {
		p.recent = p.recent[len(p.recent)-recentBlocks:]
	}
	p.dirty = true
	c.poke()
}

// DialogAnswered shows on a page's badge that the guard answered one of
// its dialogs (session is the guard's session to the page).
func (c *Controls) DialogAnswered(session, typ, why string) {
	if c == nil {
		return
	}
	verb := "declined"
	if typ == "beforeunload" {
		verb = "accepted"
	}
	target, _ := c.d.Pages.TargetOf(session)
	c.noteOn(target, "cdpguard "+verb+" this page's "+typ+" dialog: "+why)
}

// noteOn shows a line on a page's badge (a declined dialog, a refused grant).
func (c *Controls) noteOn(target, note string) {
	c.mu.Lock()
	if p := c.rec(target); p != nil {
		p.note = note
		p.dirty = true
	}
	c.mu.Unlock()
	c.poke()
}

// poke asks Run for a flush without blocking, because its callers include
// event handlers on the read loop: wake holds one signal, so pokes that
// come while one is pending merge into a single flush.
func (c *Controls) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run pushes changed state into pages, at most once per pushEvery, until
// the controls' context ends.
func (c *Controls) Run() {
	if c == nil {
		return
	}
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.wake:
		}
		c.flush(c.ctx)
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(pushEvery):
		}
	}
}
