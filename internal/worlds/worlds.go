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
// Page.frameDetached; and, through PageGone, a
// page target's Target.targetDestroyed.
package worlds

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
)

// Worlds is the guard's isolated worlds: their names (random per guard
// start) and, per frame, their context ids. Its methods are safe for
// concurrent use; Hide and the On* observers run on the browser
// connection's read loop and never block on anything but its own lock.
type Worlds struct {
	deps Deps

	mu    sync.Mutex
	names [][]byte
	// seen holds, per agent session, the context ids of guard worlds whose
	// executionContextCreated was kept from that agent, so that the matching
	// executionContextDestroyed is kept from it too.
	seen map[string]bool
	// made holds, per frame, the context ids of the guard's worlds there:
	// Debugger.scriptParsed names a script's context by id and frame only.
	// A page's ids are also recorded under its target id (its main frame
	// id), where Command looks them up.
	made map[string]map[int64]bool
	// owner holds the page of each subframe in made, so that forgetting the
	// subframe also forgets its ids under the page.
	owner map[string]string
}

// New returns a Worlds with no world yet; d wires Command to the rest of
// the guard.
func New(d Deps) *Worlds {
	return &Worlds{deps: d, seen: map[string]bool{}, made: map[string]map[int64]bool{}, owner: map[string]string{}}
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
// target ("" when the caller does not know the page).
func (w *Worlds) MadeIn(target, frameID string, contextID int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.add(frameID, contextID)
	if target != "" && target != frameID {
		w.add(target, contextID)
		w.owner[frameID] = target
	}
}

func (w *Worlds) add(frameID string, contextID int64) {
	if w.made[frameID] == nil {
		w.made[frameID] = map[int64]bool{}
	}
	w.made[frameID][contextID] = true
}

// frameGone forgets the worlds of a frame that no longer exists or that
// navigated to a new document (a page's main frame id is its target id).
// A subframe's ids are forgotten under its page too: a context id is never
// reused within one renderer process, so none of them can name a live
// guard world.
func (w *Worlds) frameGone(frameID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if page, ok := w.owner[frameID]; ok {
		for id := range w.made[frameID] {
			delete(w.made[page], id)
		}
		if len(w.made[page]) == 0 {
			delete(w.made, page)
		}
		delete(w.owner, frameID)
	}
	delete(w.made, frameID)
}

// PageGone forgets the worlds of a destroyed page and of all its frames.
func (w *Worlds) PageGone(target string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for f, page := range w.owner {
		if page == target {
			delete(w.made, f)
			delete(w.owner, f)
		}
	}
	delete(w.made, target)
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
		w.frameGone(p.Frame.ID)
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
		w.frameGone(p.FrameID)
	}
}

// Hide reports whether an event on an agent's session is about a guard
// world and must not reach the agent. Which events it looks at is their
// row of the agent event table (firewall.AgentEvent). It runs on the read
// loop: a byte search first, decoding only events that mention a guard
// world.
func (w *Worlds) Hide(e *cdpmsg.Envelope) bool {
	switch firewall.AgentEvent(e.Method) {
	case firewall.EvContextCreated:
		if !w.mentioned(e.Params) {
			return false
		}
		var p struct {
			Context struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"context"`
		}
		if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil {
			return true // unreadable and naming a guard world: keep it back
		}
		if !w.IsName(p.Context.Name) {
			return false
		}
		w.mu.Lock()
		w.seen[worldKey(e.SessionID, p.Context.ID)] = true
		w.mu.Unlock()
		return true
	case firewall.EvContextDestroyed:
		var p struct {
			ID int64 `json:"executionContextId"`
		}
		if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil {
			return false
		}
		k := worldKey(e.SessionID, p.ID)
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.seen[k] {
			delete(w.seen, k)
			return true
		}
	case firewall.EvContextsCleared:
		w.forgetSession(e.SessionID)
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
		return w.made[p.AuxData.FrameID][p.ContextID]
	}
	return false
}

// forgetSession drops what Hide remembered for an agent session whose
// contexts are all gone.
func (w *Worlds) forgetSession(session string) {
	prefix := session + "\x00"
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.seen {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			delete(w.seen, k)
		}
	}
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

func worldKey(session string, id int64) string {
	return session + "\x00" + strconv.FormatInt(id, 10)
}
