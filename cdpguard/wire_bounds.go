package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/clip"
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
		TotalBytes:   g.cfg.AgentTotalBytes, UserReceiveBytes: g.cfg.UserReceiveBytes,
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

func (s boundsStats) ReceivingBytes() (total, most int64) {
	return s.g.receiveBudget().Receiving()
}

// receiveBudget returns the receive side of the byte budget, counted
// against the total together with the bytes queued for agents.
func (g *Guard) receiveBudget() *bounds.Budget {
	g.budgetOnce.Do(func() {
		g.budget = g.limits().Budget(func() int64 {
			if g.agents == nil {
				return 0
			}
			total, _ := g.agents.QueuedBytes()
			return total
		})
	})
	return g.budget
}

// onReceiveCut counts and logs an agent connection closed by a receive
// bound (its user's share, the budget, the message's time).
func (g *Guard) onReceiveCut(remote, user, bound string) {
	g.metrics.Bounds.CutOff(bound)
	g.log.Warn("agent cut off", "remote", remote, "user", clip.String(user), "bound", bound)
}
