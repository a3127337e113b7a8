package cdpguard

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/policystate"
)

// metrics are the guard's Prometheus metrics, on a registry of its own so
// that two guards in one process (tests) never share counters. A Supervisor
// makes one set and hands it to every guard it launches, so counters survive
// browser restarts; the gauges read whichever guard is current.
type metrics struct {
	reg             *prometheus.Registry
	fetchBlocked    *prometheus.CounterVec
	proxyRefused    prometheus.Counter
	browserRestarts prometheus.Counter
	rendererCrashes prometheus.Counter
	browserOversize *prometheus.CounterVec // oversize.go
	decisionSeconds prometheus.Histogram
	cdpRefused      *prometheus.CounterVec
	mcpToolCalls    *prometheus.CounterVec
	pausesShed      prometheus.Counter
	grantsMade      prometheus.Counter
	bounds          *bounds.Metrics        // wire_bounds.go
	policyReloads   *prometheus.CounterVec // wire_policy.go
	handler         http.Handler
}

// newMetrics registers the metrics; cur returns the guard the gauges read
// (nil while a Supervisor has none: they read 0).
func newMetrics(cur func() *Guard) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		fetchBlocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_requests_blocked_total",
			Help: "Requests the Fetch judge refused, by resource type.",
		}, []string{"resource_type"}),
		proxyRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_proxy_refused_total",
			Help: "Connections the egress proxy refused.",
		}),
		browserRestarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_browser_restarts_total",
			Help: "Times the managed browser was relaunched after it died (serve only).",
		}),
		rendererCrashes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_renderer_crashes_total",
			Help: "Tabs whose renderer crashed (Target.targetCrashed); each was closed.",
		}),
		decisionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cdpguard_decision_seconds",
			Help:    "Time from a paused request reaching the guard to its answer being sent.",
			Buckets: []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1, 10},
		}),
		cdpRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_cdp_refused_total",
			Help: "Agent CDP commands refused, by firewall rule (\"isolation\" for per-user checks without a rule of their own).",
		}, []string{"rule"}),
		mcpToolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_mcp_tool_calls_total",
			Help: "MCP tool calls, by tool and outcome (ok, error, refused, canceled).",
		}, []string{"tool", "outcome"}),
		pausesShed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_paused_requests_shed_total",
			Help: "Paused requests failed at once because the Fetch judge's queue was full.",
		}),
	}
	m.browserOversize = newOversizeCounter(m.reg)
	m.policyReloads = policystate.NewReloadsCounter(m.reg)
	gauge := func(name, help string, f func(*Guard) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if g := cur(); g != nil && g.users != nil {
				return f(g)
			}
			return 0
		})
	}
	m.reg.MustRegister(m.fetchBlocked, m.proxyRefused, m.browserRestarts, m.rendererCrashes,
		m.decisionSeconds, m.cdpRefused, m.mcpToolCalls, m.pausesShed,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("cdpguard_users", "Users with a browser context.",
			func(g *Guard) float64 { return float64(g.users.Stats().Users) }),
		gauge("cdpguard_agent_connections", "Connected agents.",
			func(g *Guard) float64 { return float64(g.users.Stats().Connections) }),
		gauge("cdpguard_pauses_in_flight", "Paused requests waiting for the guard's answer.",
			func(g *Guard) float64 {
				if g.judge == nil {
					return 0
				}
				return float64(g.judge.InFlight())
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cdpguard_idle_contexts_disposed_total", Help: "Users whose contexts were disposed after being idle (since the last browser start)."},
			func() float64 {
				if g := cur(); g != nil && g.users != nil {
					return float64(g.users.Stats().Disposed)
				}
				return 0
			}),
		gauge("cdpguard_ready", "1 once the browser is guarded and the endpoint serves.",
			func(g *Guard) float64 {
				if g.ready.Load() {
					return 1
				}
				return 0
			}),
	)
	m.grantsMade = newGrantsCounter(m.reg)
	m.bounds = bounds.NewMetrics(m.reg, func() bounds.Stats { return boundsStatsOf(cur()) })
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// maxLabel bounds label values callers pass in, so a hostile or buggy
// caller cannot grow the registry without bound by inventing long names.
const maxLabel = 64

// ToolCall counts one MCP tool call: tool is the tool's name (browser_navigate,
// ...), outcome one of "ok", "error", "refused" (the guard said no) or
// "canceled" (shutdown, client gone). The MCP server calls it once per call,
// after the call ended. Safe for concurrent use.
func (m *metrics) ToolCall(tool, outcome string) {
	if len(tool) > maxLabel {
		tool = tool[:maxLabel]
	}
	switch outcome {
	case "ok", "error", "refused", "canceled":
	default:
		outcome = "error"
	}
	m.mcpToolCalls.WithLabelValues(tool, outcome).Inc()
}

// decision records how long one paused request waited for its answer.
func (m *metrics) decision(d time.Duration) { m.decisionSeconds.Observe(d.Seconds()) }
