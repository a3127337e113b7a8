package controls

import (
	"slices"
	"sync"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// debuggers records where agents have the JavaScript debugger on
// (Debugger.enable): a breakpoint's condition runs in the frame it
// pauses, so while one of a user's agents has it on, no grant on that
// user's pages counts as a human's. Each session's debugger is a record
// on the session's page (the relay places the session: Agent.TargetOf),
// which the page's end ends with the session; a session no page holds (a
// page connection's own session) is kept on its agent's record, which
// the agent's end (gone) ends.
type debuggers struct {
	// on holds, on each page, the agents' sessions there with the
	// debugger on.
	on *pages.Slot[*pageDebuggers]

	mu sync.Mutex // before on's lock
	m  map[Agent]*agentDebugger
}

// agentDebugger is one agent's record: its user, and its sessions with
// the debugger on that no page holds (a page connection's own: one, or a
// few).
type agentDebugger struct {
	user     string
	unplaced []string
}

// pageDebuggers is the sessions with the debugger on in one page, under
// debuggers.mu: an agent or two attached to a page, so a list.
type pageDebuggers struct{ on []debugOn }

// debugOn is one agent session with the debugger on.
type debugOn struct {
	a       Agent
	session string
}

func newDebuggers() debuggers {
	return debuggers{on: pages.NewSlot[*pageDebuggers](nil), m: map[Agent]*agentDebugger{}}
}

// sessionPage returns the page of agent a's session, nil when the relay
// does not place it or the registry does not know its target.
func (c *Controls) sessionPage(a Agent, session string) *pages.Page {
	if t, ok := a.TargetOf(session); ok {
		return c.d.Pages.Page(t)
	}
	return nil
}

// set records whether agent a (of user) has the debugger on in session,
// whose page is pg (nil: none known).
func (d *debuggers) set(pg *pages.Page, a Agent, user, session string, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !on {
		d.drop(pg, a, session)
		return
	}
	ad := d.m[a]
	if ad == nil {
		ad = &agentDebugger{user: user}
		d.m[a] = ad
	}
	if pg == nil {
		if !slices.Contains(ad.unplaced, session) {
			ad.unplaced = append(ad.unplaced, session)
		}
		return
	}
	rec, _ := d.on.LoadOrStore(pg, &pageDebuggers{})
	if x := (debugOn{a: a, session: session}); !slices.Contains(rec.on, x) {
		rec.on = append(rec.on, x)
	}
}

// drop forgets session's debugger and reports whether it was on. The
// caller holds d.mu.
func (d *debuggers) drop(pg *pages.Page, a Agent, session string) bool {
	if pg != nil {
		rec, ok := d.on.Get(pg)
		if !ok {
			return false
		}
		n := len(rec.on)
		rec.on = slices.DeleteFunc(rec.on, func(x debugOn) bool { return x.a == a && x.session == session })
		return len(rec.on) < n
	}
	ad := d.m[a]
	if ad == nil {
		return false
	}
	n := len(ad.unplaced)
	ad.unplaced = slices.DeleteFunc(ad.unplaced, func(s string) bool { return s == session })
	return len(ad.unplaced) < n
}

// detach forgets session's debugger (its page pg) and reports whether it
// was on.
func (d *debuggers) detach(pg *pages.Page, a Agent, session string) bool {
	if session == "" {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.drop(pg, a, session)
}

// gone forgets agent a and reports its user and whether it had the
// debugger on anywhere.
func (d *debuggers) gone(a Agent) (user string, on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ad := d.m[a]
	delete(d.m, a)
	if ad == nil {
		return "", false
	}
	on = len(ad.unplaced) > 0
	d.on.Range(func(_ *pages.Page, rec *pageDebuggers) bool {
		n := len(rec.on)
		rec.on = slices.DeleteFunc(rec.on, func(x debugOn) bool { return x.a == a })
		on = on || len(rec.on) < n
		return true
	})
	return ad.user, on
}

// debugging returns why a grant on a page of user owner must wait while
// one of that user's agents has the JavaScript debugger enabled, or "".
// Another user's debugger cannot reach the page (users never share a
// renderer); on a page of no user (known false) every agent's counts.
// Agents are asked whether they still own a session outside d.mu.
func (d *debuggers) debugging(owner string, known bool) string {
	var held []debugOn
	d.mu.Lock()
	mine := func(a Agent) bool {
		ad := d.m[a]
		return ad != nil && (!known || ad.user == owner)
	}
	for a, ad := range d.m {
		if mine(a) {
			for _, s := range ad.unplaced {
				held = append(held, debugOn{a: a, session: s})
			}
		}
	}
	d.on.Range(func(_ *pages.Page, rec *pageDebuggers) bool {
		for _, x := range rec.on {
			if mine(x.a) {
				held = append(held, x)
			}
		}
		return true
	})
	d.mu.Unlock()
	for _, x := range held {
		if x.a.Owns(x.session) { // a detached session's debugger went with it
			return "an agent has the JavaScript debugger enabled (Debugger.enable): its breakpoints can run code in any script, the controls' too"
		}
	}
	return ""
}
