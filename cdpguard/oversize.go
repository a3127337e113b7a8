package cdpguard

import "github.com/prometheus/client_golang/prometheus"

// newOversizeCounter registers the count of browser messages over the
// pipe's size limit (internal/browser/oversize.go), by what became of each:
// a paused request failed rather than left held matters most, since a
// dropped one would hang its page.
func newOversizeCounter(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cdpguard_browser_oversize_total",
		Help: "Browser messages over the 256 MB limit that the pipe skipped, by what became of them (answer: a CDP error; requestPaused: the request failed; event: dropped).",
	}, []string{"kind"})
	reg.MustRegister(c)
	return c
}
