package cdpguard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/quiet"
	"github.com/cdpguard/cdpguard/js"
)

// controlsPushEvery throttles what the guard pushes into a page's controls
// world: at most one update per page this often.
const controlsPushEvery = 150 * time.Millisecond

// controlsRecent is how many blocks of a page the panel lists.
const controlsRecent = 20

// controls is the guard's in-page UI for a human (Config.Controls): a badge
// and panel in a hidden isolated world of every page, and the "Allow <host>
// for this session" button on the explanation page of a blocked main-frame
// navigation. State flows one way, from the guard into the world; the only
// way back is the binding, whose calls are checked in controls_grant.go.
type controls struct {
	g       *Guard
	world   string        // the controls world's random name (hidden from agents)
	binding string        // the binding's random name, exposed in that world only
	input   quiet.Tracker // agents' input, debugger and window moves (internal/quiet)
	taint   worldTaint    // controls contexts agents may have reached (controls_taint.go)
	wake    chan struct{}

	mu       sync.Mutex
	pages    map[string]*ctlPage // page target id → its state
	sessions map[string]string   // the guard's page session → target id
	dirty    map[string]bool     // targets whose state changed since the last push
}

// ctlPage is what the guard knows and shows about one page target.
type ctlPage struct {
	session string
	ctxID   int64            // the controls world's context in the main frame; 0: none yet
	ctxUniq string           // ctxID's uniqueId; "" when it was recovered (controls_recover.go)
	worlds  map[int64]string // every controls context of the target → its frame
	// uniq holds the uniqueId of every controls context in worlds. Context
	// ids are small integers per renderer process: across a process swap
	// the old process's late executionContextDestroyed can carry the id of
	// the new document's context, and only the uniqueId tells them apart.
	uniq    map[string]int64
	recover ctlRecover // asking Chrome for a lost main-frame context
	blocked int
	recent  []ctlBlock
	explain *explained
	note    string
	// lastRefusal is when a refused grant was last logged at warning level.
	lastRefusal time.Time
	// failedPushes counts pushes in a row that failed into ctxID (a busy
	// renderer timing out): retried up to controlsPushRetries times.
	failedPushes int
}

// controlsPushRetries bounds the retries of a failed push into one context:
// a context that is gone fails for good, and its successor is pushed anew.
const controlsPushRetries = 5

// ctlBlock is one line of the panel.
type ctlBlock struct {
	Host   string `json:"host"`
	Reason string `json:"reason"`
}

// explained is a main-frame navigation the guard answered with the
// explanation page: the only thing a grant can be for.
type explained struct {
	url       string
	host      string
	committed bool // the explanation page is the frame's current document
	granted   bool
	refused   int
	busy      bool // a grant is being made
}

// controlsState is what the world draws (js/controls.js).
type controlsState struct {
	Blocked int            `json:"blocked"`
	Recent  []ctlBlock     `json:"recent"`
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

// startControls sets up the controls when Config.Controls is on; their
// push loop ends with the guard.
func (g *Guard) startControls() {
	if !g.cfg.Controls {
		return
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	g.ctl = &controls{
		g:        g,
		world:    g.worlds.NewName("controls"),
		binding:  "cdpguard_" + hex.EncodeToString(b),
		wake:     make(chan struct{}, 1),
		pages:    map[string]*ctlPage{},
		sessions: map[string]string{},
		dirty:    map[string]bool{},
	}
	g.dialogs.SetHuman(true, func(session, typ, why string) {
		verb := "declined"
		if typ == "beforeunload" {
			verb = "accepted"
		}
		g.ctl.noteOnSession(session, "cdpguard "+verb+" this page's "+typ+" dialog: "+why)
	})
	g.wg.Add(1)
	go func() { // the push loop: ends with the guard
		defer g.wg.Done()
		g.ctl.run(g.ctx)
	}()
}

// setupPage installs the controls on the guard's new session to a page.
// The commands are written in order before the page is released, so the
// binding and the script are in place for its first document; their
// replies are not awaited (controls are UI: a page whose controls failed is
// still guarded). runImmediately covers documents already loaded when the
// guard attached.
func (c *controls) setupPage(targetID, session string) {
	c.mu.Lock()
	c.sessions[session] = targetID
	if c.pages[targetID] == nil {
		c.pages[targetID] = &ctlPage{session: session, worlds: map[int64]string{}, uniq: map[string]int64{}}
	}
	c.mu.Unlock()
	for _, cmd := range []struct {
		method string
		params any
	}{
		{"Runtime.addBinding", map[string]any{"name": c.binding, "executionContextName": c.world}},
		{"Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": js.Controls, "worldName": c.world, "runImmediately": true}},
		{"Runtime.enable", nil},
	} {
		if err := c.g.mux.Send(session, cmd.method, cmd.params); err != nil {
			c.g.log.Debug("controls setup failed", "target", targetID, "step", cmd.method, "err", err)
			return
		}
	}
}

// pageGone forgets a destroyed page.
func (c *controls) pageGone(targetID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pages[targetID]; p != nil {
		delete(c.sessions, p.session)
	}
	delete(c.pages, targetID)
	delete(c.dirty, targetID)
	c.taint.gone(targetID, func(int64) bool { return true })
}

// onEvent takes the guard's page-session events the controls follow. It
// runs on the mux read loop and never blocks.
func (c *controls) onEvent(e *cdpmsg.Envelope) {
	switch e.Method {
	case "Runtime.executionContextCreated":
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
		if !strings.Contains(string(e.Params), c.world) || jsonv2.Unmarshal(e.Params, &p) != nil || p.Context.Name != c.world {
			return
		}
		c.contextCreated(e.SessionID, p.Context.AuxData.FrameID, p.Context.ID, p.Context.UniqueID)
	case "Runtime.executionContextDestroyed":
		var p struct {
			ID       int64  `json:"executionContextId"`
			UniqueID string `json:"executionContextUniqueId"`
		}
		if jsonv2.Unmarshal(e.Params, &p) == nil {
			c.contextDestroyed(e.SessionID, p.ID, p.UniqueID)
		}
	case "Runtime.executionContextsCleared":
		c.contextGone(e.SessionID, func(int64, string) bool { return true })
	case "Runtime.bindingCalled":
		c.bindingCalled(e.SessionID, e.Params)
	}
}

// frameNavigated starts a page's count afresh on a new main-frame document
// and keeps the explained block only if the new document is its
// explanation page. Guard worlds of the frame were just forgotten
// (worlds.frameGone): the live controls contexts are recorded again, since
// the new document's may have been reported before the navigation.
func (c *controls) frameNavigated(session, frameID, frameURL string) {
	c.mu.Lock()
	target := c.sessions[session]
	p := c.pages[target]
	if p == nil {
		c.mu.Unlock()
		return
	}
	var live []int64
	for id, f := range p.worlds {
		if f == frameID {
			live = append(live, id)
		}
	}
	if frameID == target {
		p.recover.navigated()
		if p.ctxID != 0 && p.ctxUniq == "" {
			// A recovered context is the previous document's.
			if id := p.ctxID; !slices.Contains(slices.Collect(maps.Values(p.uniq)), id) {
				delete(p.worlds, id)
				c.taint.gone(target, func(i int64) bool { return i == id })
			}
			p.ctxID = 0
		}
		p.blocked, p.recent, p.note = 0, nil, ""
		if x := p.explain; x != nil {
			if x.url == frameURL && !x.committed {
				x.committed = true
				p.blocked = 1
				p.recent = []ctlBlock{{Host: x.host, Reason: "not on the allowlist (this page)"}}
			} else {
				p.explain = nil
			}
		}
		c.dirty[target] = true
	}
	c.mu.Unlock()
	for _, id := range live {
		c.g.worlds.MadeIn(target, frameID, id)
	}
	c.poke()
}

// blocked counts a refused request on its page; a main-frame navigation
// answered with the explanation page is recorded as explained.
func (c *controls) blocked(b fetchdomain.Block) {
	c.mu.Lock()
	defer c.mu.Unlock()
	target := b.FrameID
	p := c.pages[target]
	if p == nil {
		target = c.g.scopes.PageOf(b.FrameID) // a subframe
		p = c.pages[target]
	}
	if p == nil {
		return
	}
	host := b.URL
	if u, err := url.Parse(b.URL); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	if b.TopLevel && target == b.FrameID && c.g.cfg.BlockedNavigation != "error" {
		p.explain = &explained{url: b.URL, host: host}
		return // counted when its page commits (frameNavigated)
	}
	p.blocked++
	p.recent = append(p.recent, ctlBlock{Host: host, Reason: b.Reason})
	if len(p.recent) > controlsRecent {
		p.recent = p.recent[len(p.recent)-controlsRecent:]
	}
	c.dirty[target] = true
	c.poke()
}

// noteOn shows a line on a page's badge (a declined dialog, a refused grant).
func (c *controls) noteOn(target, note string) {
	c.mu.Lock()
	if p := c.pages[target]; p != nil {
		p.note = note
		c.dirty[target] = true
	}
	c.mu.Unlock()
	c.poke()
}

// noteOnSession is noteOn for the guard's session to the page.
func (c *controls) noteOnSession(session, note string) {
	c.mu.Lock()
	target := c.sessions[session]
	c.mu.Unlock()
	c.noteOn(target, note)
}

// poke asks run for a flush without blocking, because its callers include
// event handlers on the mux read loop: wake holds one signal, so pokes that
// come while one is pending merge into a single flush.
func (c *controls) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run pushes changed state into pages, at most once per controlsPushEvery.
func (c *controls) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		}
		c.flush(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(controlsPushEvery):
		}
	}
}

type ctlPush struct {
	target  string
	session string
	ctxID   int64
	ctxUniq string
	state   controlsState
}

// flush pushes the state of every changed page into its controls world on
// the guard's own session: the page never supplies any of it.
func (c *controls) flush(ctx context.Context) {
	c.mu.Lock()
	var pushes []ctlPush
	var recoveries []ctlRecovery
	for target := range c.dirty {
		p := c.pages[target]
		delete(c.dirty, target)
		if p == nil {
			continue
		}
		if p.ctxID == 0 {
			if r := c.needsRecovery(target, p); r != nil {
				recoveries = append(recoveries, *r)
			}
			continue
		}
		st := controlsState{Blocked: p.blocked, Recent: append([]ctlBlock{}, p.recent...), Note: p.note, Binding: c.binding}
		if x := p.explain; x != nil && x.committed {
			st.Explain = &explainedView{Host: x.host, Granted: x.granted, Refused: x.refused}
			if _, err := c.g.scopes.Grantable(target, x.host); err != nil {
				st.Explain.NoGrant = strings.TrimPrefix(err.Error(), "grant: ")
			}
		}
		st.Origins = slices.Concat(c.g.policyOfTarget(target).Origins(), c.g.scopes.Hosts(target))
		pushes = append(pushes, ctlPush{target: target, session: p.session, ctxID: p.ctxID, ctxUniq: p.ctxUniq, state: st})
	}
	c.mu.Unlock()
	for _, r := range recoveries {
		c.recoverWorld(ctx, r)
	}
	for _, p := range pushes {
		params := map[string]any{
			"functionDeclaration": js.ControlsUpdate,
			"arguments":           []any{map[string]any{"value": p.state}},
			"returnByValue":       true,
		}
		// By uniqueId when known: an id alone may name another process's
		// context (the page's own) after a cross-process navigation.
		if p.ctxUniq != "" {
			params["uniqueContextId"] = p.ctxUniq
		} else {
			params["executionContextId"] = p.ctxID
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.g.mux.Call(cctx, p.session, "Runtime.callFunctionOn", params)
		cancel()
		c.pushed(p, err)
	}
}

// pushed records a push's outcome: a failed one is tried again on the next
// round while its context is still the page's, up to controlsPushRetries.
func (c *controls) pushed(p ctlPush, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pg := c.pages[p.target]
	if pg == nil || pg.ctxID != p.ctxID || pg.ctxUniq != p.ctxUniq {
		return
	}
	if err == nil {
		pg.failedPushes = 0
		return
	}
	pg.failedPushes++
	c.g.log.Debug("controls push failed", "target", p.target, "tries", pg.failedPushes, "err", err)
	if pg.failedPushes <= controlsPushRetries {
		c.dirty[p.target] = true
		c.poke()
	}
}
