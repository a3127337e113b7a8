package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/targets"
	"github.com/cdpguard/cdpguard/internal/users"
)

// newTargets wires the guard's record of the browser's targets
// (internal/targets) to the page registry, the page observers, the tab
// cap and the agents. Its observers run on the read loop; their browser
// sends go through the outbox.
func (g *Guard) newTargets() *targets.Record {
	return targets.New(targets.Deps{
		Browser:      muxCaller{g},
		Pages:        g.pages,
		Ctx:          g.ctx,
		Go:           g.goWaited,
		Outbox:       func(f func()) { g.fx.Add(f) },
		AttachMode:   func() bool { return g.attached }, // set by Attach after newGuard
		PageAttached: g.pageAttached,
		PageGone:     g.pageGone,
		OverTabs: func(contextID string) (*users.User, error) {
			u := g.users.OwnerOfContext(contextID)
			switch {
			case u == nil:
				return nil, nil
			case g.iso.OverTabs(u):
				return u, &isolation.CapError{Cap: isolation.CapTabs, Limit: g.limits().MaxTabs, Flag: "--max-tabs-per-user"}
			}
			if err := g.users.OverTabsInAll(); err != nil {
				return u, err
			}
			return nil, nil
		},
		Notify: func(u *users.User, method string, params []byte) {
			g.agents.Notify(func(v *users.User) bool { return v == u }, method, params)
		},
		Evict:        g.agents.Evict,
		WindowOpened: func() { g.ctl.WindowOpened() }, // g.ctl is built in start, after the record
		Owners:       g.users,
		OnCap:        func(c string) { g.metrics.Bounds.Capped(c) }, // read at each call: a Supervisor swaps g.metrics
		OnCrash:      func() { g.metrics.RendererCrashes.Inc() },
		Log:          g.log,
	})
}

// pageAttached tells the page observers that a page target got the
// guard's session (its setup starts; the page registry already has it).
func (g *Guard) pageAttached(targetID, sessionID string) {
	g.dialogs.Attach(sessionID, targetID)
	g.ctl.SetupPage(targetID, sessionID)
}

// pageGone is pageAttached's end: the target was destroyed (the page
// registry forgets it after them, and its page's end ends the records the
// features keep on it: the dialog state, the guard's worlds, the
// controls' badge, the setup).
func (g *Guard) pageGone(targetID string) {
	g.rd.PageGone(targetID)
}
