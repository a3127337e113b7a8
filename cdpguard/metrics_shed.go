package cdpguard

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// shedCounter returns the counter of paused requests the Fetch judge failed
// at once because its queue was full (fetchdomain.Options.OnShed). It is
// registered on first use; a guard started again on the same registry gets
// the same counter back, so the count survives a browser restart.
func (m *metrics) shedCounter() prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "cdpguard_paused_requests_shed_total",
		Help: "Paused requests failed at once because the Fetch judge's queue was full.",
	})
	if err := m.reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(prometheus.Counter); ok {
				return old
			}
		}
		// Cannot happen with the fixed name above; count anyway.
	}
	return c
}
