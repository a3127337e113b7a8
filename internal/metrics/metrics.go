// Package metrics holds the guard's Prometheus metrics, on a registry of
// their own so that two guards in one process (tests) never share counters.
// A Supervisor makes one set and hands it to every guard it launches, so
// counters survive browser restarts; the gauges read whichever guard is
// current (View). It observes no CDP events.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/policystate"
)

// Metrics are the guard's counters and gauges. The counters are set by the
// guard's components; the gauges read a View when scraped.
type Metrics struct {
	Reg             *prometheus.Registry
	FetchBlocked    *prometheus.CounterVec // by resource type
	ProxyRefused    prometheus.Counter
	BrowserRestarts prometheus.Counter
	RendererCrashes prometheus.Counter
	BrowserOversize *prometheus.CounterVec // by kind (internal/browser/oversize.go)
	CDPRefused      *prometheus.CounterVec // by firewall rule
	PausesShed      prometheus.Counter
	GrantsMade      prometheus.Counter
	Bounds          *bounds.Metrics
	PolicyReloads   *prometheus.CounterVec // internal/policystate
	Handler         http.Handler           // GET /metrics

	decisionSeconds prometheus.Histogram
	mcpToolCalls    *prometheus.CounterVec
}

// View is what the gauges read of the current guard.
type View interface {
	// Users returns the users with a browser context, the connected
	// agents and the users disposed after being idle.
	Users() (users, connections, disposed int)
	// PausesInFlight returns the paused requests waiting for an answer.
	PausesInFlight() int
	// Ready reports whether the browser is guarded and the endpoint serves.
	Ready() bool
	// Bounds is the bounds gauges' view (internal/bounds).
	Bounds() bounds.Stats
}

// New registers the metrics; cur returns the guard the gauges read (nil
// while a Supervisor has none: they read 0).
func New(cur func() View) *Metrics {
	m := &Metrics{
		Reg: prometheus.NewRegistry(),
		FetchBlocked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_requests_blocked_total",
			Help: "Requests the Fetch judge refused, by resource type.",
		}, []string{"resource_type"}),
		ProxyRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_proxy_refused_total",
			Help: "Connections the egress proxy refused.",
		}),
		BrowserRestarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_browser_restarts_total",
			Help: "Times the managed browser was relaunched after it died (serve only).",
		}),
		RendererCrashes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_renderer_crashes_total",
			Help: "Tabs whose renderer crashed (Target.targetCrashed); each was closed.",
		}),
		BrowserOversize: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_browser_oversize_total",
			Help: "Browser messages over the browser-message bound (--browser-message-bytes, 256 MiB by default) that the pipe skipped, by what became of them (answer: a CDP error; requestPaused: the request failed; event: dropped).",
		}, []string{"kind"}),
		decisionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cdpguard_decision_seconds",
			Help:    "Time from a paused request reaching the guard to its answer being sent.",
			Buckets: []float64{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1, 10},
		}),
		CDPRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_cdp_refused_total",
			Help: "Agent CDP commands refused, by firewall rule (\"isolation\" for per-user checks without a rule of their own).",
		}, []string{"rule"}),
		mcpToolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdpguard_mcp_tool_calls_total",
			Help: "MCP tool calls, by tool and outcome (ok, error, refused, canceled).",
		}, []string{"tool", "outcome"}),
		PausesShed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_paused_requests_shed_total",
			Help: "Paused requests failed at once because the Fetch judge's queue was full.",
		}),
		GrantsMade: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cdpguard_grants_total",
			Help: "Hosts granted for a session (\"Allow <host> for this session\").",
		}),
	}
	m.PolicyReloads = policystate.NewReloadsCounter(m.Reg)
	gauge := func(name, help string, f func(View) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if g := cur(); g != nil {
				return f(g)
			}
			return 0
		})
	}
	m.Reg.MustRegister(m.FetchBlocked, m.ProxyRefused, m.BrowserRestarts, m.RendererCrashes,
		m.BrowserOversize, m.decisionSeconds, m.CDPRefused, m.mcpToolCalls, m.PausesShed, m.GrantsMade,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		gauge("cdpguard_users", "Users with a browser context.",
			func(g View) float64 { n, _, _ := g.Users(); return float64(n) }),
		gauge("cdpguard_agent_connections", "Connected agents.",
			func(g View) float64 { _, n, _ := g.Users(); return float64(n) }),
		gauge("cdpguard_pauses_in_flight", "Paused requests waiting for the guard's answer.",
			func(g View) float64 { return float64(g.PausesInFlight()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cdpguard_idle_contexts_disposed_total", Help: "Users whose contexts were disposed after being idle (since the last browser start)."},
			func() float64 {
				if g := cur(); g != nil {
					_, _, n := g.Users()
					return float64(n)
				}
				return 0
			}),
		gauge("cdpguard_ready", "1 once the browser is guarded and the endpoint serves.",
			func(g View) float64 {
				if g.Ready() {
					return 1
				}
				return 0
			}),
	)
	m.Bounds = bounds.NewMetrics(m.Reg, func() bounds.Stats {
		if g := cur(); g != nil {
			return g.Bounds()
		}
		return nil
	})
	m.Handler = promhttp.HandlerFor(m.Reg, promhttp.HandlerOpts{})
	return m
}

// maxLabel bounds label values callers pass in, so a hostile or buggy
// caller cannot grow the registry without bound by inventing long names.
const maxLabel = 64

// ToolCall counts one MCP tool call: tool is the tool's name (browser_navigate,
// ...), outcome one of "ok", "error", "refused" (the guard said no) or
// "canceled" (shutdown, client gone). The MCP server calls it once per call,
// after the call ended. Safe for concurrent use.
func (m *Metrics) ToolCall(tool, outcome string) {
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

// Decision records how long one paused request waited for its answer.
func (m *Metrics) Decision(d time.Duration) { m.decisionSeconds.Observe(d.Seconds()) }
