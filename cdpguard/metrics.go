package cdpguard

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the guard's Prometheus metrics, on a registry of its own so
// that two guards in one process (tests) never share counters.
type metrics struct {
	reg          *prometheus.Registry
	fetchBlocked *prometheus.CounterVec
	proxyRefused prometheus.Counter
	handler      http.Handler
}

func newMetrics(g *Guard) *metrics {
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
	}
	m.reg.MustRegister(m.fetchBlocked, m.proxyRefused,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cdpguard_users", Help: "Users with a browser context."},
			func() float64 { return float64(g.users.Stats().Users) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cdpguard_agent_connections", Help: "Connected agents."},
			func() float64 { return float64(g.users.Stats().Connections) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "cdpguard_idle_contexts_disposed_total", Help: "Users whose contexts were disposed after being idle."},
			func() float64 { return float64(g.users.Stats().Disposed) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cdpguard_ready", Help: "1 once the browser is guarded and the endpoint serves."},
			func() float64 {
				if g.ready.Load() {
					return 1
				}
				return 0
			}),
	)
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}
