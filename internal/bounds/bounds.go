// Package bounds turns the configured byte bounds of agent queues
// (internal/relay) and per-user caps (internal/isolation) into the values
// those packages take, and counts what they do: cut-offs, throttling,
// dropped messages, refused tabs and contexts, and gauges of totals and
// maxima over users (never a series per user). Why these numbers:
// docs/decisions/2026-12-02-bounds.md. It observes no CDP events.
package bounds

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Limits are the bounds in force, defaults applied.
type Limits struct {
	// AgentQueueBytes and UserQueueBytes are the queue maxima of one
	// agent connection and of all of one user's.
	AgentQueueBytes, UserQueueBytes int64
	// WriteTimeout bounds one write to an agent, and how long an agent
	// may stay over its back-pressure mark.
	WriteTimeout time.Duration
	// MaxTabs and MaxContexts are the per-user caps; 0 means none.
	MaxTabs, MaxContexts int
	// TotalBytes is the one budget of bytes queued for and being received
	// from all agents (0: DefaultTotalBytes); UserReceiveBytes one user's
	// share of it for what is being received (0: DefaultUserReceiveBytes).
	TotalBytes, UserReceiveBytes int64
}

// Relay returns the relay's byte bounds. An agent's back-pressure mark is
// an eighth of its maximum, a user's a quarter of its; the pause bound is
// the agent write bound.
func (l Limits) Relay() relay.Bounds {
	return relay.Bounds{
		AgentQueueBytes: l.AgentQueueBytes / 8, AgentMaxBytes: l.AgentQueueBytes,
		UserQueueBytes: l.UserQueueBytes / 4, UserMaxBytes: l.UserQueueBytes,
		MaxMessage:    min(relay.DefaultMaxMessage, l.AgentQueueBytes/2),
		PauseBound:    l.WriteTimeout,
		TotalMaxBytes: l.TotalBytes,
	}
}

// Budget returns the receive side of the byte budget; queued returns the
// bytes queued for agents (the relay's share of the same total).
func (l Limits) Budget(queued func() int64) *Budget {
	return NewBudget(l.TotalBytes, l.UserReceiveBytes, queued)
}

// Cap returns a cap (a count, a size or a rate) from its configured value
// v: def when v is zero, none (0) when v is negative.
func Cap[T int | int64 | float64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Stats is what the gauges read, from the guard in service.
type Stats interface {
	// QueuedBytes returns the bytes queued for all users' agents and for
	// the user with the most.
	QueuedBytes() (total, most int64)
	// TabStats returns the open tabs of the user with the most, and how
	// many users are at the tab cap.
	TabStats() (most, atCap int)
	// ReceivingBytes returns the bytes reserved for agent messages and
	// /mcp bodies being received, in all and for the user with the most.
	ReceivingBytes() (total, most int64)
}

// Metrics are the metrics of the byte bounds and the per-user caps. Its
// methods are safe for concurrent use and cheap enough for the mux read
// loop (counters and a log line).
type Metrics struct {
	cutOffAll prometheus.Counter
	cutOff    *prometheus.CounterVec
	throttled prometheus.Counter
	dropped   *prometheus.CounterVec
	capped    *prometheus.CounterVec
	mcp       *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg; cur returns the Stats the
// gauges read (nil: they read 0).
func NewMetrics(reg prometheus.Registerer, cur func() Stats) *Metrics {
	m := &Metrics{
		cutOffAll: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_agents_cut_off_total",
			Help: "Agent connections closed because they did not read their messages in time.",
		}),
		cutOff: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_agents_cut_off_by_bound_total",
			Help: "Agent connections cut off, by bound: agent_bytes, user_bytes, total_bytes (queue maxima), paused (did not catch up in time), write_stall (one write outlasted the bound), receive_user_bytes, receive_total_bytes (a message being received went over the user's share or the budget), receive_timeout (a message did not arrive in time). Their sum is cdpguard_agents_cut_off_total.",
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
			Help: "Refusals by a cap, by cap: tabs and contexts (per user; a tab past it is closed at once), users, contexts_total, new_users_rate, connections_per_user, session_header_bytes (docs/scaling.md).",
		}, []string{"cap"}),
		mcp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_mcp_refused_total",
			Help: "/mcp requests refused by a cap, by cap: sessions_per_user, sessions (new MCP sessions), bodies_per_user, bodies (request bodies being read at once), body_timeout (a body not read in time), body_bytes (over 4 MiB), receive_user_bytes, receive_total_bytes (the byte budget).",
		}, []string{"cap"}),
	}
	gauge := func(name, help string, f func(Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if s := cur(); s != nil {
				return f(s)
			}
			return 0
		})
	}
	reg.MustRegister(m.cutOffAll, m.cutOff, m.throttled, m.dropped, m.capped, m.mcp,
		gauge("cdpguard_receiving_bytes", "Bytes reserved for agent messages and /mcp bodies being received (the receive side of the byte budget).",
			func(s Stats) float64 { total, _ := s.ReceivingBytes(); return float64(total) }),
		gauge("cdpguard_user_receiving_bytes_max", "Bytes reserved for what the user with the most is sending.",
			func(s Stats) float64 { _, most := s.ReceivingBytes(); return float64(most) }),
		gauge("cdpguard_agent_queued_bytes", "Bytes queued for all agents, not yet written.",
			func(s Stats) float64 { total, _ := s.QueuedBytes(); return float64(total) }),
		gauge("cdpguard_user_queued_bytes_max", "Bytes queued for the agents of the user with the most.",
			func(s Stats) float64 { _, most := s.QueuedBytes(); return float64(most) }),
		gauge("cdpguard_user_tabs_max", "Open tabs of the user with the most.",
			func(s Stats) float64 { most, _ := s.TabStats(); return float64(most) }),
		gauge("cdpguard_users_at_tab_cap", "Users at the per-user tab cap.",
			func(s Stats) float64 { _, at := s.TabStats(); return float64(at) }),
	)
	for _, k := range []string{relay.CutAgentBytes, relay.CutUserBytes, relay.CutTotalBytes, relay.CutPaused, CutWriteStall,
		BoundUserReceive, BoundTotalReceive, BoundReceiveTime} {
		m.cutOff.WithLabelValues(k)
	}
	for _, k := range []string{isolation.CapTabs, isolation.CapContexts,
		users.CapUsers, users.CapContexts, users.CapTabs, users.CapNewUsers, users.CapConnections, users.CapHeader} {
		m.capped.WithLabelValues(k)
	}
	for _, k := range []string{"sessions_per_user", "sessions", "bodies_per_user", "bodies", "body_timeout", "body_bytes", BoundUserReceive, BoundTotalReceive} {
		m.mcp.WithLabelValues(k)
	}
	return m
}

// CutWriteStall is the bound of an agent cut off because one write to it
// outlasted the write bound.
const CutWriteStall = "write_stall"

// OnCutOff returns the relay's OnCutOff for one agent connection (name,
// user, for the log): it counts and logs an agent cut off by a byte or
// pause bound.
func (m *Metrics) OnCutOff(log *slog.Logger, name, user string) func(kind, reason string) {
	return func(kind, reason string) {
		m.CutOff(kind)
		log.Warn("agent cut off", "remote", name, "user", clip.String(user), "bound", kind, "reason", reason)
	}
}

// CutOff counts an agent cut off by bound kind.
func (m *Metrics) CutOff(kind string) {
	m.cutOffAll.Inc()
	m.cutOff.WithLabelValues(kind).Inc()
}

// Throttled counts an agent whose commands are no longer read for a while.
func (m *Metrics) Throttled() { m.throttled.Inc() }

// Dropped counts a reply or event over the one-message bound, by kind.
func (m *Metrics) Dropped(kind string) { m.dropped.WithLabelValues(kind).Inc() }

// MCPRefused counts an /mcp request refused by cap c (the label values of
// cdpguard_mcp_refused_total).
func (m *Metrics) MCPRefused(c string) { m.mcp.WithLabelValues(c).Inc() }

// Capped counts a refusal by cap c: a per-user cap (isolation.CapTabs,
// isolation.CapContexts) or a cap on users (users.CapUsers, ...).
func (m *Metrics) Capped(c string) { m.capped.WithLabelValues(c).Inc() }
