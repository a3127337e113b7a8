package worlds

import (
	"slices"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// What Hide kept from agent sessions, on their pages: an agent session
// ends with its page (or before it: a detach, which the page's end
// covers), so the page's end forgets what its sessions were kept from.

// hidOn is the guard worlds Hide kept from the agent sessions on one page,
// under Worlds.mu: a page has a few agent sessions, each shown a few
// guard worlds (one per feature per frame), so a list.
type hidOn struct{ hid []hidden }

// hidden is one guard world's context kept from one agent session.
type hidden struct {
	session string
	id      int64
}

// sessionPage returns the page of agent a's session: its target's, as the
// relay placed it (placed; nil when the registry does not know the
// target: no guard world is recorded there); for a session it does not
// place (a page connection's own) the page of frameID, the frame of a
// context it reports, nil when the event names none. The caller holds
// w.mu.
func (w *Worlds) sessionPage(a Agent, session, frameID string) (pg *pages.Page, placed bool) {
	if a != nil {
		if t, ok := a.TargetOf(session); ok {
			return w.deps.Pages.Page(t), true
		}
	}
	if frameID == "" {
		return nil, false
	}
	return w.pageOfFrame("", frameID), false
}

// hide records that the guard world id was kept from session, on its
// page pg. With no page known nothing is recorded: its destroy is then
// shown, naming a context that no longer exists. The caller holds w.mu.
func (w *Worlds) hide(pg *pages.Page, session string, id int64) {
	if pg == nil {
		return
	}
	on, _ := w.hid.LoadOrStore(pg, &hidOn{})
	if h := (hidden{session: session, id: id}); !slices.Contains(on.hid, h) {
		on.hid = append(on.hid, h)
	}
}

// unhide forgets the guard worlds kept from session whose id matches, on
// its page pg, and reports whether there were any. A session the agent
// does not place (placed false: a page connection's own) is looked for on
// every page with such a record. The caller holds w.mu.
func (w *Worlds) unhide(pg *pages.Page, placed bool, session string, match func(int64) bool) bool {
	drop := func(on *hidOn) bool {
		n := len(on.hid)
		on.hid = slices.DeleteFunc(on.hid, func(h hidden) bool { return h.session == session && match(h.id) })
		return len(on.hid) < n
	}
	if pg != nil {
		on, ok := w.hid.Get(pg)
		return ok && drop(on)
	}
	if placed {
		return false
	}
	found := false
	w.hid.Range(func(_ *pages.Page, on *hidOn) bool {
		found = drop(on) || found
		return true
	})
	return found
}
