// Package pages is the guard's one registry of pages: which browser context
// each target is in, which targets are pages (tabs) and which are not web
// content, the guard's own session on each page, and the page that holds
// each subframe. It is fed once, on the browser connection's read loop, from
// the target events (Target.attachedToTarget, targetCreated,
// targetInfoChanged, targetDestroyed: internal/targets) and the frame
// events on the guard's page sessions (Page.frameAttached,
// Page.frameDetached: OnFrameAttached, OnFrameDetached, declared in the
// event table, cdpguard/events.go). The users registry (context → user),
// the grant scopes, the controls, the reader and the dialog handler read
// it through the small interfaces each of them declares.
//
// Each target is one Page (page.go), which also holds every feature's
// record of that page in a Slot the feature declares (the dialog state,
// the guard's worlds and what they kept from each agent session there,
// the controls' badge and taints, the agents' debuggers on it, the
// reader's tab, the setup under way): a feature asks the page instead of
// keeping a map by target or session id, and the page's end (Destroyed)
// ends all of them in one place.
//
// Its lock is a leaf: no method calls out while holding it, so any other
// component's lock may be held while calling it (docs/decisions/
// 2026-12-02-page-registry.md).
package pages

import (
	"sync"
	"time"

	"github.com/chromedp/cdproto/target"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// Keep is how long a destroyed target is kept: events about it can arrive
// after Target.targetDestroyed (a paused request of its last navigation, a
// late frame event), and they must still be attributed to its user.
const Keep = time.Minute

// Registry is the table of targets, the guard's page sessions and
// subframes. Its zero value is not usable; use New. Its methods are safe
// for concurrent use.
type Registry struct {
	now func() time.Time

	mu       sync.Mutex
	targets  map[string]*Page  // target id → what is known of it; destroyed ones kept for Keep
	sessions map[string]string // the guard's session on a page → the page's target id
	frames   map[string]string // subframe id → the page target that holds it
	gone     []destroyed       // destroyed targets, oldest first
	// unheard are the pages made by the setup's bookkeeping (made) before
	// any target event named them, oldest first: one still unheard of
	// after Keep is dropped (prune), as a destroyed one is.
	unheard []made
}

type made struct {
	p  *Page
	at time.Time
}

type destroyed struct {
	id string
	at time.Time
}

// Target is a live target as Live lists it.
type Target struct {
	ID, Context string
	Page        bool
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{
		now:      time.Now,
		targets:  map[string]*Page{},
		sessions: map[string]string{},
		frames:   map[string]string{},
	}
}

// rec returns targetID's record, creating it; the caller holds r.mu.
func (r *Registry) rec(targetID string) *Page {
	t := r.targets[targetID]
	if t == nil {
		t = &Page{id: target.ID(targetID)}
		r.targets[targetID] = t
	}
	return t
}

// made returns targetID's record, creating it for a target no target
// event named yet: Ensure, SetupDone and AwaitSetup can name a target
// before its event (a Target.createTarget reply read first) or after it
// was dropped (a late setup end), and such a page, which no
// Target.targetDestroyed will end, is dropped by prune unless a target
// event names it within Keep. The caller holds r.mu.
func (r *Registry) made(targetID string) *Page {
	t := r.targets[targetID]
	if t == nil {
		t = r.rec(targetID)
		r.unheard = append(r.unheard, made{p: t, at: r.now()})
	}
	return t
}

// heard reports whether a target event named t (Track, MarkPage, MarkWeb,
// Attached, Destroyed). The caller holds r.mu.
func (t *Page) heard() bool {
	return t.context != "" || t.page || t.notWeb != "" || t.session != "" || t.gone
}

// Track records the browser context a target is in, as Chrome reports it
// on every target event. An empty target or context id is ignored.
func (r *Registry) Track(targetID, contextID string) {
	if targetID == "" || contextID == "" {
		return
	}
	r.mu.Lock()
	dropped := r.prune(r.now())
	r.rec(targetID).context = contextID
	r.mu.Unlock()
	endAll(dropped)
}

// MarkPage records that a target is a page (a tab).
func (r *Registry) MarkPage(targetID string) {
	if targetID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec(targetID).page = true
}

// MarkWeb records whether a target is web content: why is "" for web
// content, or why it is not (firewall.NotWeb). A target's URL can change,
// so it is updated on every target event.
func (r *Registry) MarkWeb(targetID, why string) {
	if targetID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.targets[targetID]; t != nil || why != "" {
		r.rec(targetID).notWeb = why
	}
}

// Attached records sessionID as the guard's own session on page targetID:
// its setup starts, and the events on that session are the page's. A
// destroyed target gets no session.
func (r *Registry) Attached(targetID, sessionID string) {
	if targetID == "" || sessionID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.rec(targetID)
	if t.gone {
		return
	}
	if t.session != "" {
		delete(r.sessions, t.session)
	}
	t.session = sessionID
	r.sessions[sessionID] = targetID
}

// Destroyed ends a target (Target.targetDestroyed): its session and
// subframes are forgotten at once, its context, page and web marks are kept
// for Keep so that late events about it are still attributed. The page's
// end follows, after the registry's lock is let go: every feature's record
// on it (Slot) is ended here, in one place, on the caller's goroutine.
func (r *Registry) Destroyed(targetID string) {
	if targetID == "" {
		return
	}
	r.mu.Lock()
	now := r.now()
	dropped := r.prune(now)
	t := r.rec(targetID)
	defer func() {
		r.mu.Unlock()
		endAll(dropped)
		t.end()
	}()
	if t.session != "" {
		delete(r.sessions, t.session)
		t.session = ""
	}
	for f, page := range r.frames {
		if page == targetID {
			delete(r.frames, f)
		}
	}
	if !t.gone {
		t.gone = true
		r.gone = append(r.gone, destroyed{id: targetID, at: now})
	}
}

// prune drops the targets destroyed longer than Keep ago, and those made
// unheard of (made) that no target event named within Keep, and returns
// them, for the caller to end (a record a late event put on a page after
// its end is ended with the page's drop) once it let go of r.mu, which it
// holds. Every target event calls it (Track, Destroyed), so no goroutine
// is needed and the kept targets are those destroyed within about Keep.
func (r *Registry) prune(now time.Time) (dropped []*Page) {
	n := 0
	for _, d := range r.gone {
		if now.Sub(d.at) <= Keep {
			break
		}
		if t := r.targets[d.id]; t != nil && t.gone {
			delete(r.targets, d.id)
			dropped = append(dropped, t)
		}
		n++
	}
	if n > 0 {
		r.gone = append(r.gone[:0], r.gone[n:]...)
	}
	n = 0
	for _, m := range r.unheard {
		if now.Sub(m.at) <= Keep {
			break
		}
		if r.targets[string(m.p.id)] == m.p && !m.p.heard() {
			delete(r.targets, string(m.p.id))
			dropped = append(dropped, m.p)
		}
		n++
	}
	if n > 0 {
		r.unheard = append(r.unheard[:0], r.unheard[n:]...)
	}
	return dropped
}

// endAll ends pages dropped by prune; the caller holds no lock.
func endAll(dropped []*Page) {
	for _, p := range dropped {
		p.end()
	}
}

// OnFrameAttached and OnFrameDetached learn the subframes of the guard's
// pages from Page.frameAttached and Page.frameDetached on the guard's page
// sessions (the event table, cdpguard/events.go, routes each here); frames
// on sessions that are not the guard's page sessions (an out-of-process
// iframe's, an agent's) are ignored: a paused request of a frame the
// registry does not know gets no page, and so no user's grants (the policy
// alone decides, which fails closed). A detach for a swap keeps the frame:
// it moves to another process but stays on its page.
func (r *Registry) OnFrameAttached(e *cdpmsg.Envelope) { r.frameEvent(e, true) }

// OnFrameDetached: see OnFrameAttached.
func (r *Registry) OnFrameDetached(e *cdpmsg.Envelope) { r.frameEvent(e, false) }

// frameEvent records (attached) or forgets a subframe of e's page.
func (r *Registry) frameEvent(e *cdpmsg.Envelope, attached bool) {
	if e.SessionID == "" {
		return
	}
	var p struct {
		FrameID string `json:"frameId"`
		Reason  string `json:"reason"`
	}
	if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil || p.FrameID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	page, ok := r.sessions[e.SessionID]
	if !ok {
		return
	}
	switch {
	case attached && p.FrameID != page: // the main frame's id is the page's
		r.frames[p.FrameID] = page
	case !attached && p.Reason != "swap":
		delete(r.frames, p.FrameID)
	}
}
