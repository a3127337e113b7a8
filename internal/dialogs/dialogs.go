// Package dialogs keeps JavaScript dialogs from hanging a page while letting
// agents answer them. The guard enables the Page domain on every page it
// attaches and sees each Page.javascriptDialogOpening. When an agent
// connection has Page events enabled on that page, the agent gets the grace
// period to answer and its answer is what the page sees; when none does, or
// the grace runs out, the guard answers: alert, confirm and prompt are
// dismissed, beforeunload is accepted so that navigation proceeds.
//
// Every dialog gets exactly one answer: the guard's timer and an agent's
// Page.handleJavaScriptDialog race under one lock, and whichever comes first
// owns the answer. An agent's answer after the guard's is refused with an
// error that says so instead of Chrome's "No dialog is showing", see
// docs/decisions/2026-12-01-dialogs.md.
package dialogs

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/pages"
)

// DefaultGrace is how long an agent that listens for dialogs has to answer
// one before the guard does: the one place the default is stated.
const DefaultGrace = 3 * time.Second

// Sender sends a CDP command without awaiting its reply.
type Sender interface {
	Send(sessionID, method string, params any) error
}

// Pages tells which page a session of the guard's is on, and holds each
// page's dialog state (internal/pages.Registry). It never calls back into
// the handler, so it is asked under Handler.mu.
type Pages interface {
	// TargetOf returns the page target of the guard's session sessionID.
	TargetOf(sessionID string) (targetID string, ok bool)
	// Page returns the page of targetID, nil for one never seen.
	Page(targetID string) *pages.Page
}

// state is where a dialog is in its life.
type state int

const (
	open          state = iota // shown, nobody has answered
	claimed                    // an agent's answer is on its way to Chrome
	guardAnswered              // the guard answered it
	closed                     // Chrome closed it (answered by an agent, a human, or navigation)
)

// dialog is one JavaScript dialog on one page.
type dialog struct {
	typ   string
	url   string
	timer *time.Timer
	grace time.Duration // how long it waits for an agent's answer
	flag  string        // the flag that set grace
	state state
	why   string // why the guard answered, when it did
	gone  bool   // Chrome said it closed (Closed), whoever answered it
}

// page is the dialog state of one target, held on its page (Handler.slot).
// Its fields are under Handler.mu.
type page struct {
	session string  // the guard's session on the target
	cur     *dialog // the latest dialog, nil before the first
	// listeners are the agents' sessions with Page events enabled on the
	// target (Listen): the dialog waits for their answer.
	listeners []listener
	// navURL is the URL of the page's latest cross-document navigation
	// (Navigating), "" before one.
	navURL string
	// committed: the main frame committed a document since that
	// navigation started (Navigated), so nothing is stuck.
	committed bool
	// unanswered is when the guard last answered a dialog no agent
	// answered: within one grace of it the guard answers at once, so a
	// page that opens dialogs in a loop waits one grace at most.
	unanswered time.Time
}

type listener struct {
	owner   any
	session string
}

// Handler answers dialogs. Its zero grace answers at once.
type Handler struct {
	sender Sender
	pages  Pages
	grace  time.Duration
	log    *slog.Logger
	now    func() time.Time

	// slot holds each page's dialog state on the page; its end (the
	// target destroyed) stops the page's pending answer.
	slot *pages.Slot[*page]
	// loose is the dialog state of sessions the page registry does not
	// place (a page destroyed already, a session never set up), newest
	// last, at most maxLoose (under mu).
	loose []*page

	wg       sync.WaitGroup // answers being sent by timers
	mu       sync.Mutex     // taken before the page registry's lock (Pages) and the slot's
	closed   bool
	graces   map[any]time.Duration // owners with a grace of their own (SetOwnerGrace)
	human    bool                  // a human may answer: every dialog gets the grace (SetHuman)
	onAnswer func(sessionID, typ, why string)
	call     Caller // SetCaller; nil: answers are only sent
}

// New returns a Handler whose listening agents get grace to answer; pages
// places the guard's sessions.
func New(send Sender, pgs Pages, grace time.Duration, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &Handler{
		sender: send, pages: pgs, grace: grace, log: log, now: time.Now,
		graces: map[any]time.Duration{},
	}
	h.slot = pages.NewSlot(h.ended)
	return h
}

// ended stops the pending answer of a destroyed page (the page's end).
func (h *Handler) ended(_ *pages.Page, p *page) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p.stop()
}

// stop stops the pending answer of p's dialog; the caller holds h.mu.
func (p *page) stop() {
	if p.cur != nil && p.cur.timer != nil {
		p.cur.timer.Stop()
	}
}

// rec returns target's dialog state, nil when it has none. The caller
// holds h.mu.
func (h *Handler) rec(target string) *page {
	p, _ := h.slot.Get(h.pages.Page(target))
	return p
}

// ensure returns target's dialog state, making it (with the guard's
// session sessionID) on first use; nil when the page registry does not
// know the target. The caller holds h.mu.
func (h *Handler) ensure(target, sessionID string) *page {
	pg := h.pages.Page(target)
	if pg == nil {
		return nil
	}
	p, _ := h.slot.LoadOrStore(pg, &page{session: sessionID})
	if p.session == "" { // made by a listener before the guard's session was named
		p.session = sessionID
	}
	return p
}

// listening returns the page owner's session sessionID listens on and
// its target, nil when none. The caller holds h.mu.
func (h *Handler) listening(l listener) (target string, rec *page) {
	h.slot.Range(func(pg *pages.Page, p *page) bool {
		if slices.Contains(p.listeners, l) {
			target, rec = string(pg.ID()), p
			return false
		}
		return true
	})
	return target, rec
}

// Grace returns the grace period agents get.
func (h *Handler) Grace() time.Duration { return h.grace }

// Attach starts the dialog state of page targetID, on which sessionID is
// the guard's session.
func (h *Handler) Attach(sessionID, targetID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.ensure(targetID, sessionID); p != nil {
		p.session = sessionID
	}
}

// Forget drops a target's dialog state and its listeners and stops its
// pending answer, as the page's end does.
func (h *Handler) Forget(targetID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.slot.Delete(h.pages.Page(targetID)); ok {
		p.stop()
	}
}

// Listen records that owner (an agent connection) enabled Page events on
// its session sessionID to targetID, or disabled them (on false). The
// listener is kept on the target's page; a target the page registry never
// heard of gets none: Chrome tells the guard's discovery of a target
// before any session attaches to it, so such a target is one dropped
// after pages.Keep, which opens no dialog (TestListenInEventOrder).
func (h *Handler) Listen(owner any, sessionID, targetID string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := listener{owner, sessionID}
	if _, p := h.listening(l); p != nil {
		p.listeners = slices.DeleteFunc(p.listeners, func(x listener) bool { return x == l })
	}
	if on && targetID != "" {
		if p := h.ensure(targetID, ""); p != nil {
			p.listeners = append(p.listeners, l)
		}
	}
}

// SetOwnerGrace gives owner's dialogs a wait of their own instead of the
// handler's grace: the MCP tools' model answers in its next turn, which
// takes seconds (--mcp-dialog-wait), where a CDP agent answers in
// milliseconds (--dialog-grace).
func (h *Handler) SetOwnerGrace(owner any, d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.graces[owner] = d
}

// graceFor is the wait of p's dialogs: the longest of its listeners'
// graces, and the handler's with a human. The caller holds h.mu.
// flag names where it comes from, for the guard's reasons.
func (h *Handler) graceFor(p *page) (g time.Duration, found bool, flag string) {
	flag = "--dialog-grace"
	for _, l := range p.listeners {
		found = true
		og, ok := h.graces[l.owner]
		if !ok {
			og = h.grace
		}
		if og > g {
			g = og
			flag = "--dialog-grace"
			if ok {
				flag = "--mcp-dialog-wait"
			}
		}
	}
	if h.human && h.grace > g {
		g, flag = h.grace, "--dialog-grace"
	}
	return g, found || h.human, flag
}

// ForgetOwner drops every session of an agent connection that closed.
func (h *Handler) ForgetOwner(owner any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.graces, owner)
	h.slot.Range(func(_ *pages.Page, p *page) bool {
		p.listeners = slices.DeleteFunc(p.listeners, func(l listener) bool { return l.owner == owner })
		return true
	})
}

// targetOf returns the target of the guard's session; a session the page
// registry does not place (not a page's, or its page destroyed) keys its
// own state. The caller holds h.mu.
func (h *Handler) targetOf(sessionID string) string {
	if target, ok := h.pages.TargetOf(sessionID); ok {
		return target
	}
	return sessionID
}

// maxLoose bounds the states kept for sessions the page registry does not
// place: such a session is a page's that is gone, so only its latest
// dialogs matter; the oldest state is dropped first.
const maxLoose = 64

// pageOf returns the dialog state of the guard's session's page, making it
// for a session Attach never named; a session the page registry does not
// place keys a state of its own (loose: no agent listens there, so its
// dialogs are answered at once, or after the grace with a human). The
// caller holds h.mu.
func (h *Handler) pageOf(sessionID string) *page {
	if p := h.ensure(h.targetOf(sessionID), sessionID); p != nil {
		return p
	}
	if p := h.looseOf(sessionID); p != nil {
		return p
	}
	p := &page{session: sessionID}
	if len(h.loose) >= maxLoose {
		h.loose = slices.Delete(h.loose, 0, len(h.loose)-maxLoose+1)
	}
	h.loose = append(h.loose, p)
	return p
}

// looseOf returns the state of a session the page registry does not
// place, nil when it has none. The caller holds h.mu.
func (h *Handler) looseOf(sessionID string) *page {
	for _, p := range h.loose {
		if p.session == sessionID {
			return p
		}
	}
	return nil
}

// replaced reports whether p is a loose state dropped for room whose
// session has a newer one: that one holds the session's dialog (Chrome
// shows one at a time), so p's timer must not answer it. A dropped state
// with no newer one still answers its dialog. The caller holds h.mu.
func (h *Handler) replaced(p *page) bool {
	q := h.looseOf(p.session)
	return q != nil && q != p
}

// placed returns the dialog state of the guard's session, on its page or
// loose; nil when it has none. The caller holds h.mu.
func (h *Handler) placed(sessionID string) *page {
	if target, ok := h.pages.TargetOf(sessionID); ok {
		return h.rec(target)
	}
	return h.looseOf(sessionID)
}

// Opening takes a Page.javascriptDialogOpening event on the guard's session
// sessionID. It does not block.
func (h *Handler) Opening(sessionID string, params []byte) {
	var ev struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	}
	if err := cdpmsg.UnmarshalBrowser(params, &ev); err != nil {
		h.log.Warn("unreadable dialog event; dismissing", "err", err)
	}
	d := &dialog{typ: ev.Type, url: ev.URL}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	p := h.pageOf(sessionID)
	p.stop()
	p.cur = d
	grace, listened, flag := h.graceFor(p)
	d.grace, d.flag = grace, flag
	wait := grace > 0 && listened && h.now().Sub(p.unanswered) >= grace
	if wait {
		d.timer = time.AfterFunc(grace, func() { h.expire(p, d) })
		h.mu.Unlock()
		return
	}
	d.state = guardAnswered
	d.why = "no agent connection had Page events enabled on this page"
	if grace > 0 && listened {
		// The loop rule: the streak goes on while the page keeps opening.
		d.why = fmt.Sprintf("the page keeps opening dialogs and the last one got no answer within %s (%v)", flag, grace)
		p.unanswered = h.now()
	}
	h.mu.Unlock()
	h.answer(sessionID, d)
}

// expire answers d when the grace ran out with no agent's answer.
func (h *Handler) expire(p *page, d *dialog) {
	h.mu.Lock()
	if h.closed || p.cur != d || d.state != open || h.replaced(p) {
		h.mu.Unlock()
		return
	}
	d.state = guardAnswered
	d.why = fmt.Sprintf("no answer came within %s (%v)", d.flag, d.grace)
	p.unanswered = h.now()
	session := p.session
	h.wg.Add(1)
	h.mu.Unlock()
	defer h.wg.Done()
	h.answer(session, d)
}

// Closed takes a Page.javascriptDialogClosed event on the guard's session.
func (h *Handler) Closed(sessionID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.placed(sessionID)
	if p == nil || p.cur == nil {
		return
	}
	p.cur.gone = true
	if p.cur.state == open || p.cur.state == claimed {
		if p.cur.timer != nil {
			p.cur.timer.Stop()
		}
		p.cur.state = closed
	}
}

// answer sends the guard's answer to d.
func (h *Handler) answer(sessionID string, d *dialog) {
	accept := d.typ == "beforeunload"
	h.send(sessionID, accept)
	h.log.Info("dialog answered by the guard", "type", d.typ, "accept", accept, "url", d.url, "why", d.why)
	h.mu.Lock()
	notify := h.onAnswer
	h.mu.Unlock()
	if notify != nil {
		notify(sessionID, d.typ, d.why)
	}
}

// Claim is called for an agent's Page.handleJavaScriptDialog on its
// session sessionID, before it is forwarded; the command is always
// forwarded. When done is not nil the agent owns the answer and done must
// be called with whether Chrome accepted it (on failure the guard answers,
// so the dialog still gets exactly one answer). When late is set, the guard
// already answered the latest dialog on that page: if Chrome refuses the
// agent's answer ("No dialog is showing"), late is the error the agent
// should see instead. (Forwarding even then keeps an answer to a dialog
// whose opening the guard has not read yet working.)
func (h *Handler) Claim(owner any, sessionID string) (done func(ok bool), late string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, p := h.listening(listener{owner, sessionID})
	if p == nil || p.cur == nil {
		return nil, "" // a session the guard cannot place: Chrome decides
	}
	d := p.cur
	switch d.state {
	case open:
		if d.timer != nil {
			d.timer.Stop()
		}
		d.state = claimed
		p.unanswered = time.Time{}
		return func(ok bool) {
			if ok {
				return
			}
			h.mu.Lock()
			if h.closed || p.cur != d || d.state != claimed {
				h.mu.Unlock()
				return
			}
			d.state = guardAnswered
			d.why = "the agent's answer failed"
			session := p.session
			h.mu.Unlock()
			h.answer(session, d)
		}, ""
	case guardAnswered:
		verb := "dismissed"
		if d.typ == "beforeunload" {
			verb = "accepted"
		}
		raise := "--dialog-grace (CDPGUARD_DIALOG_GRACE)"
		if d.flag == "--mcp-dialog-wait" {
			raise = "--mcp-dialog-wait (CDPGUARD_MCP_DIALOG_WAIT)"
		}
		return nil, fmt.Sprintf("cdpguard already %s this %s dialog: %s; answer sooner or raise %s", verb, d.typ, d.why, raise)
	}
	return nil, "" // claimed by another agent, or closed: Chrome decides
}

// Close stops pending answers and waits for answers being sent.
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	h.slot.Range(func(_ *pages.Page, p *page) bool {
		p.stop()
		return true
	})
	for _, p := range h.loose {
		p.stop()
	}
	h.mu.Unlock()
	h.wg.Wait()
}
