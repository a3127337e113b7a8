package cdpguard

import (
	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/users"
)

// This file wires the byte bounds of agent queues and the per-user caps
// (internal/bounds) to the guard: their Config values, the gauges' view of
// the guard, and the tab cap's backstop for tabs that appear past the
// command check (popups, concurrent creates).

// limits returns the bounds from the Config, defaults applied.
func (g *Guard) limits() bounds.Limits {
	l := bounds.Limits{
		AgentQueueBytes: g.cfg.AgentQueueBytes, UserQueueBytes: g.cfg.UserQueueBytes,
		WriteTimeout: g.agentWriteTimeout(),
		MaxTabs:      bounds.Cap(g.cfg.MaxTabsPerUser, DefaultMaxTabsPerUser),
		MaxContexts:  bounds.Cap(g.cfg.MaxContextsPerUser, DefaultMaxContextsPerUser),
	}
	if l.AgentQueueBytes <= 0 {
		l.AgentQueueBytes = DefaultAgentQueueBytes
	}
	if l.UserQueueBytes <= 0 {
		l.UserQueueBytes = DefaultUserQueueBytes
	}
	return l
}

// boundsStats is the bounds gauges' view of a guard.
type boundsStats struct{ g *Guard }

func (s boundsStats) QueuedBytes() (total, most int64) {
	return s.g.agents.QueuedBytes()
}

func (s boundsStats) TabStats() (most, atCap int) {
	return s.g.users.TabStats(s.g.limits().MaxTabs)
}

// tabOverCap closes a page that took its user past the tab cap (a popup,
// or creates that raced past the command check), tells the user's
// connections that sent Guard.enable (Guard.targetRefused), logs and
// counts it. session is the guard's session to it, waiting whether it is
// held there. It runs on the mux read loop; the close goes through the
// outbox goroutine. It reports whether the page was closed.
func (g *Guard) tabOverCap(t targetInfo, session string, waiting bool) bool {
	u := g.users.OwnerOfContext(t.BrowserContextID)
	if u == nil || !g.iso.OverTabs(u) {
		return false
	}
	limit := g.limits().MaxTabs
	err := &isolation.CapError{Cap: isolation.CapTabs, Limit: limit, Flag: "--max-tabs-per-user"}
	g.metrics.Bounds.Capped(isolation.CapTabs)
	g.log.Warn("tab over the per-user cap closed", "user", u.Key, "target", t.TargetID, "opener", t.OpenerID, "cap", limit)
	id := t.TargetID
	g.fx.Add(func() {
		_ = g.mux.Send("", "Target.closeTarget", map[string]any{"targetId": id})
		if session != "" && waiting {
			// A popup can share its opener's renderer: held, it would
			// hold the opener too, and the close waits on it.
			_ = g.mux.Send(session, "Runtime.runIfWaitingForDebugger", nil)
		}
	})
	params, jerr := jsonv2.Marshal(map[string]string{
		"targetId": t.TargetID, "openerId": t.OpenerID, "url": t.URL,
		"reason": "cdpguard: closed at once: " + err.Error(),
	})
	if jerr != nil {
		return true
	}
	g.agents.Notify(func(v *users.User) bool { return v == u }, "Guard.targetRefused", params)
	return true
}
