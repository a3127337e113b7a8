package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/bounds"
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
