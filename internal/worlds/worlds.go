// Package worlds names the isolated worlds the guard creates in pages (the
// reader's, the controls') and keeps them from agents: an agent that held
// one of their execution contexts could evaluate in it, and a page cannot
// reach them only while nobody hands their context ids out. A Worlds hides
// the events that would tell an agent of them (Hide) and refuses agent
// commands that name one of their context ids (Command), a rule on a
// parameter of every method rather than a row of the firewall table.
//
// CDP events it observes: on agents' sessions (Hide)
// Runtime.executionContextCreated, Runtime.executionContextDestroyed,
// Runtime.executionContextsCleared, Debugger.scriptParsed and
// Debugger.scriptFailedToParse; on the guard's own page sessions
// (OnFrameNavigated, OnFrameDetached) Page.frameNavigated and
// Page.frameDetached. The context ids of a page's guard worlds, and those
// Hide kept from each agent session on the page, are records on its page
// (internal/pages), which the page's end (Target.targetDestroyed)
// forgets.
package worlds

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/pages"
)

// Worlds is the guard's isolated worlds: their names (random per guard
// start) and, per frame, their context ids. Its methods are safe for
// concurrent use; Hide and the On* observers run on the browser
// connection's read loop and never block on anything but its own lock.
type Worlds struct {
	deps Deps

	// made holds, on each page, the guard's worlds there (madeOn); its
	// end forgets them.
	made *pages.Slot[*madeOn]
	// hid holds, on the page of each agent session, the guard worlds
	// whose executionContextCreated Hide kept from that session (hidOn),
	// so that the matching executionContextDestroyed is kept from it too;
	// the page's end (its sessions end with it) forgets them.
	hid *pages.Slot[*hidOn]

	mu    sync.Mutex // before the page registry's lock, made's and hid's
	names [][]byte
	// loose are the worlds made in a frame whose page the registry could
	// not tell (none when every world is made on a known page).
	loose madeOn
}

// madeOn is the guard's worlds on one page, under Worlds.mu: a few per
// frame (one per feature), so a list.
type madeOn struct{ worlds []made }

// made is one guard world: its frame and context id. Debugger.scriptParsed
// names a script's context by id and frame only; Command looks ids up on a
// page, where a world counts when it is in the main frame (frame is the
// page's target id) or was recorded with its page (onPage).
type made struct {
	frame  string
	id     int64
	onPage bool
}

// New returns a Worlds with no world yet; d wires Command to the rest of
// the guard.
func New(d Deps) *Worlds {
	if d.Pages == nil {
		d.Pages = pages.New() // no page known but those MadeIn names
	}
	return &Worlds{deps: d, made: pages.NewSlot[*madeOn](nil), hid: pages.NewSlot[*hidOn](nil)}
}

// NewName returns a fresh random world name for purpose and hides it.
func (w *Worlds) NewName(purpose string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	name := "cdpguard_" + purpose + "_" + hex.EncodeToString(b)
	w.mu.Lock()
	w.names = append(w.names, []byte(name))
	w.mu.Unlock()
	return name
}

// IsName reports whether s is the name of one of the guard's worlds.
func (w *Worlds) IsName(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.names {
		if string(n) == s {
			return true
		}
	}
	return false
}

// MadeIn records a guard world's context in frameID, a frame of page
// target ("" when the caller does not know the page). Its ids are
// cdproto's types: the controls and the reader call it.
func (w *Worlds) MadeIn(target target.ID, frameID cdp.FrameID, contextID runtime.ExecutionContextID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := made{frame: string(frameID), id: int64(contextID), onPage: target != "" && string(target) != string(frameID)}
	on := &w.loose
	if pg := w.pageOfFrame(string(target), string(frameID)); pg != nil {
		on, _ = w.made.LoadOrStore(pg, &madeOn{})
	}
	if !slices.Contains(on.worlds, m) {
		on.worlds = append(on.worlds, m)
	}
}

// pageOfFrame returns the page of frameID, a frame of page target ("" when
// the caller does not know): a page's main frame id is its target id, a
// subframe's page is the registry's. nil when none is known. The caller
// holds w.mu.
func (w *Worlds) pageOfFrame(target, frameID string) *pages.Page {
	if target != "" {
		return w.deps.Pages.Ensure(target)
	}
	if pg := w.deps.Pages.Page(frameID); pg != nil {
		return pg
	}
	if t := w.deps.Pages.PageOf(frameID); t != "" {
		return w.deps.Pages.Page(t)
	}
	return nil
}

// each calls f with every page's worlds (and the loose ones, page nil)
// until it returns false. The caller holds w.mu.
func (w *Worlds) each(f func(pg *pages.Page, on *madeOn) bool) {
	if !f(nil, &w.loose) {
		return
	}
	w.made.Range(f)
}

// frameGone forgets the worlds of a frame that no longer exists or that
// navigated to a new document (a page's main frame id is its target id),
// as the guard's page session sessionID reported it. A subframe's ids are
// forgotten under its page too: a context id is never reused within one
// renderer process, so none of them can name a live guard world. Only
// the frame's page is looked at (its main frame, else the page of the
// session that reported it, else the registry's page of the subframe),
// and the loose worlds; every page only when none is known.
func (w *Worlds) frameGone(sessionID, frameID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pg := w.deps.Pages.Page(frameID)
	if pg == nil {
		pg = w.deps.Pages.PageOfSession(sessionID)
	}
	if pg == nil {
		if t := w.deps.Pages.PageOf(frameID); t != "" {
			pg = w.deps.Pages.Page(t)
		}
	}
	forget := func(main bool, on *madeOn) {
		on.worlds = slices.DeleteFunc(on.worlds, func(m made) bool { return m.frame == frameID })
		if main { // a new document in the main frame: none of the page's ids is its own now
			for i := range on.worlds {
				on.worlds[i].onPage = false
			}
		}
	}
	forget(false, &w.loose)
	if pg == nil { // a frame no page is known for (an out-of-process iframe's session): every page
		w.made.Range(func(pg *pages.Page, on *madeOn) bool {
			forget(false, on)
			return true
		})
		return
	}
	if on, ok := w.made.Get(pg); ok {
		forget(string(pg.ID()) == frameID, on)
	}
}

// OnFrameNavigated learns of Page.frameNavigated on one of the guard's own
// page sessions: a new document, so the guard's worlds of the old one are
// gone, and their context ids may be the new document's own (a new
// renderer process numbers its contexts from 1 again). The event table
// (cdpguard/events.go) routes the event here.
func (w *Worlds) OnFrameNavigated(e *cdpmsg.Envelope) {
	var p struct {
		Frame struct {
			ID string `json:"id"`
		} `json:"frame"`
	}
	if cdpmsg.UnmarshalBrowser(e.Params, &p) == nil && p.Frame.ID != "" {
		w.frameGone(e.SessionID, p.Frame.ID)
	}
}

// OnFrameDetached learns of Page.frameDetached on one of the guard's own
// page sessions: a removed frame. A detach for a swap keeps the frame (it
// moves to another process, whose session reports its new worlds, perhaps
// before this event): its entries are left to its page's end rather than
// risk forgetting a live world.
func (w *Worlds) OnFrameDetached(e *cdpmsg.Envelope) {
	var p struct {
		FrameID string `json:"frameId"`
		Reason  string `json:"reason"`
	}
	if cdpmsg.UnmarshalBrowser(e.Params, &p) == nil && p.FrameID != "" && p.Reason != "swap" {
		w.frameGone(e.SessionID, p.FrameID)
	}
}

// Agent is the agent connection an event came on (relay.Agent).
type Agent interface {
	// TargetOf returns the target of one of the agent's sessions; ok is
	// false for a session the relay does not place (a page connection's
	// own session).
	TargetOf(sessionID string) (target string, ok bool)
}

// Hide reports whether an event on one of agent a's sessions is about a
// guard world and must not reach the agent. Which events it looks at is
// their row of the agent event table (firewall.AgentEvent). It runs on
// the read loop: a byte search first, decoding only events that mention a
// guard world.
func (w *Worlds) Hide(a Agent, e *cdpmsg.Envelope) bool {
	switch firewall.AgentEvent(e.Method) {
	case firewall.EvContextCreated:
		if !w.mentioned(e.Params) {
			return false
		}
		var p struct {
			Context struct {
				ID      int64  `json:"id"`
				Name    string `json:"name"`
				AuxData struct {
					FrameID string `json:"frameId"`
				} `json:"auxData"`
			} `json:"context"`
		}
		if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil {
			return true // unreadable and naming a guard world: keep it back
		}
		if !w.IsName(p.Context.Name) {
			return false
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		pg, _ := w.sessionPage(a, e.SessionID, p.Context.AuxData.FrameID)
		w.hide(pg, e.SessionID, p.Context.ID)
		return true
	case firewall.EvContextDestroyed:
		var p struct {
			ID int64 `json:"executionContextId"`
		}
		if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil {
			return false
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		pg, placed := w.sessionPage(a, e.SessionID, "")
		return w.unhide(pg, placed, e.SessionID, func(id int64) bool { return id == p.ID })
	case firewall.EvContextsCleared:
		w.mu.Lock()
		defer w.mu.Unlock()
		pg, placed := w.sessionPage(a, e.SessionID, "")
		w.unhide(pg, placed, e.SessionID, func(int64) bool { return true })
	case firewall.EvScriptParsed:
		if !bytes.Contains(e.Params, []byte(`"isolated"`)) {
			return false
		}
		var p struct {
			ContextID int64 `json:"executionContextId"`
			AuxData   struct {
				FrameID string `json:"frameId"`
			} `json:"executionContextAuxData"`
		}
		if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil {
			return false
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.madeInFrame(p.AuxData.FrameID, p.ContextID)
	}
	return false
}

// madeInFrame reports whether id is a guard world's context in frameID.
// The frame's page is looked up (its main frame, else the registry's page
// of the subframe); only a frame the registry cannot place (a subframe
// open before the guard attached, an out-of-process iframe's) walks every
// page's worlds. The caller holds w.mu.
func (w *Worlds) madeInFrame(frameID string, id int64) bool {
	has := func(on *madeOn) bool {
		return slices.Contains(on.worlds, made{frame: frameID, id: id}) ||
			slices.Contains(on.worlds, made{frame: frameID, id: id, onPage: true})
	}
	if has(&w.loose) {
		return true
	}
	pg := w.deps.Pages.Page(frameID)
	if pg == nil {
		if t := w.deps.Pages.PageOf(frameID); t != "" {
			pg = w.deps.Pages.Page(t)
		}
	}
	if pg != nil {
		on, ok := w.made.Get(pg)
		return ok && has(on)
	}
	found := false
	w.made.Range(func(_ *pages.Page, on *madeOn) bool {
		found = has(on)
		return !found
	})
	return found
}

func (w *Worlds) mentioned(params []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.names {
		if bytes.Contains(params, n) {
			return true
		}
	}
	return false
}
