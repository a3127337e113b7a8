package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/targets"
	"github.com/cdpguard/cdpguard/internal/users"
)

// newTargets wires the guard's record of the browser's targets
// (internal/targets) to the page registry, the agents, the tab caps and
// the page observers (targetSide). Its observers run on the read loop;
// their browser sends go through the outbox.
func (g *Guard) newTargets() *targets.Record {
	return targets.New(targets.Deps{
		Browser: muxCaller{g},
		Pages:   g.pages,
		Guard:   targetSide{g},
		Agents:  g.agents,
		Ctx:     g.ctx,
		Life:    (*guardLife)(&g.lifecycle),
		Outbox:  g.fx,
		Attach:  g.attached,
		Owners:  g.users,
		Caps:    g.metrics.Bounds,
		Crashes: g.metrics.RendererCrashes,
		Log:     g.log,
	})
}

// targetSide is the guard's side of the targets' record (targets.Guard):
// the tab caps span the users and their isolation, and a page's news
// goes to the features that keep a record of it.
type targetSide struct{ g *Guard }

// OverTabs returns the user a new tab in contextID took past a tab cap
// (theirs: isolation's; all users': the users registry's) and the cap's
// refusal.
func (s targetSide) OverTabs(contextID string) (*users.User, error) {
	u := s.g.users.OwnerOfContext(contextID)
	switch {
	case u == nil:
		return nil, nil
	case s.g.iso.OverTabs(u):
		return u, &isolation.CapError{Cap: isolation.CapTabs, Limit: s.g.limits().MaxTabs, Flag: "--max-tabs-per-user"}
	}
	if err := s.g.users.OverTabsInAll(); err != nil {
		return u, err
	}
	return nil, nil
}

// WindowOpened starts the controls' quiet window.
func (s targetSide) WindowOpened() { s.g.ctl.WindowOpened() }

// PageAttached tells the page observers that a page target got the
// guard's session (its setup starts; the page registry already has it).
func (s targetSide) PageAttached(targetID, sessionID string) {
	s.g.dialogs.Attach(sessionID, targetID)
	s.g.ctl.SetupPage(targetID, sessionID)
}
