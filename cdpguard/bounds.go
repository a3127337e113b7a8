package cdpguard

import (
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// This file wires the byte bounds of agent queues (internal/relay) and the
// per-user caps (internal/isolation) to the guard: their Config values,
// metrics and logs, and the tab cap's backstop for tabs that appear past
// the command check (popups, concurrent creates). Why these numbers:
// docs/decisions/2026-12-02-bounds.md.

// bounds returns the relay's byte bounds from the Config. An agent's
// back-pressure mark is an eighth of its maximum, a user's a quarter of
// its; the pause bound is the agent write bound.
func (g *Guard) bounds() relay.Bounds {
	agent := g.cfg.AgentQueueBytes
	if agent <= 0 {
		agent = DefaultAgentQueueBytes
	}
	user := g.cfg.UserQueueBytes
	if user <= 0 {
		user = DefaultUserQueueBytes
	}
	return relay.Bounds{
		AgentQueueBytes: agent / 8, AgentMaxBytes: agent,
		UserQueueBytes: user / 4, UserMaxBytes: user,
		MaxMessage: min(relay.DefaultMaxMessage, agent/2),
		PauseBound: g.agentWriteTimeout(),
	}
}

// maxTabs is the per-user tab cap; 0 means none.
func (g *Guard) maxTabs() int { return capOf(g.cfg.MaxTabsPerUser, DefaultMaxTabsPerUser) }

// maxContexts is the per-user cap of created contexts; 0 means none.
func (g *Guard) maxContexts() int { return capOf(g.cfg.MaxContextsPerUser, DefaultMaxContextsPerUser) }

func capOf(v, def int) int {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// onCutOff counts and logs an agent cut off by a byte or pause bound. It
// runs on the mux read loop: counters and a log line only.
func (g *Guard) onCutOff(name, user string) func(kind, reason string) {
	return func(kind, reason string) {
		g.metrics.agentsSlowClosed.Inc()
		g.metrics.bounds.cutOff.WithLabelValues(kind).Inc()
		g.log.Warn("agent cut off", "remote", name, "user", user, "bound", kind, "reason", reason)
	}
}

// boundsMetrics are the metrics of the byte bounds and the per-user caps:
// totals and maxima over users, never a series per user.
type boundsMetrics struct {
	cutOff    *prometheus.CounterVec
	throttled prometheus.Counter
	dropped   *prometheus.CounterVec
	capped    *prometheus.CounterVec
}

func newBoundsMetrics(reg *prometheus.Registry, cur func() *Guard) *boundsMetrics {
	m := &boundsMetrics{
		cutOff: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_agents_cut_off_by_bound_total",
			Help: "Agent connections cut off, by bound: agent_bytes, user_bytes, total_bytes (queue maxima), paused (did not catch up in time), write_stall (one write outlasted the bound). Their sum is cdpguard_agents_cut_off_total.",
		}, []string{"bound"}),
		throttled: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_agents_throttled_total",
			Help: "Times the guard stopped reading an agent's commands because its queue, or its user's, was over the back-pressure mark.",
		}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_agent_messages_dropped_total",
			Help: "Replies (answered with a CDP error instead) and events over the one-message bound, by kind.",
		}, []string{"kind"}),
		capped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_cap_refused_total",
			Help: "Tabs and browser contexts refused (or closed at once) by a per-user cap, by cap.",
		}, []string{"cap"}),
	}
	gauge := func(name, help string, f func(*Guard) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if g := cur(); g != nil && g.users != nil {
				return f(g)
			}
			return 0
		})
	}
	reg.MustRegister(m.cutOff, m.throttled, m.dropped, m.capped,
		gauge("cdpguard_agent_queued_bytes", "Bytes queued for all agents, not yet written.",
			func(g *Guard) float64 { total, _ := g.queuedBytes(); return float64(total) }),
		gauge("cdpguard_user_queued_bytes_max", "Bytes queued for the agents of the user with the most.",
			func(g *Guard) float64 { _, most := g.queuedBytes(); return float64(most) }),
		gauge("cdpguard_user_tabs_max", "Open tabs of the user with the most.",
			func(g *Guard) float64 { most, _ := g.users.TabStats(g.maxTabs()); return float64(most) }),
		gauge("cdpguard_users_at_tab_cap", "Users at the per-user tab cap.",
			func(g *Guard) float64 { _, at := g.users.TabStats(g.maxTabs()); return float64(at) }),
	)
	for _, k := range []string{relay.CutAgentBytes, relay.CutUserBytes, relay.CutTotalBytes, relay.CutPaused, "write_stall"} {
		m.cutOff.WithLabelValues(k)
	}
	for _, k := range []string{isolation.CapTabs, isolation.CapContexts} {
		m.capped.WithLabelValues(k)
	}
	return m
}

// queuedBytes returns the bytes queued for all users' agents and for the
// user with the most.
func (g *Guard) queuedBytes() (total, most int64) {
	g.agents.shares.Range(func(s *relay.Share) {
		n := s.QueuedBytes()
		total += n
		most = max(most, n)
	})
	return total, most
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
	err := &isolation.CapError{Cap: isolation.CapTabs, Limit: g.maxTabs(), Flag: "--max-tabs-per-user"}
	g.metrics.bounds.capped.WithLabelValues(isolation.CapTabs).Inc()
	g.log.Warn("tab over the per-user cap closed", "user", u.Key, "target", t.TargetID, "opener", t.OpenerID, "cap", g.maxTabs())
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
	g.agents.mu.Lock()
	defer g.agents.mu.Unlock()
	for a, st := range g.agents.m {
		if st.user == u && st.guardEvents.Load() {
			a.SendEvent("Guard.targetRefused", params)
		}
	}
	return true
}
