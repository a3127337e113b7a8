package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/metrics"
)

// newMetrics registers the guard's metrics (internal/metrics); cur returns
// the guard the gauges read (nil while a Supervisor has none: they read 0).
func newMetrics(cur func() *Guard) *metrics.Metrics {
	return metrics.New(func() metrics.View {
		if g := cur(); g != nil && g.users != nil {
			return gaugeView{g}
		}
		return nil
	})
}

// gaugeView is the gauges' view of a guard.
type gaugeView struct{ g *Guard }

func (v gaugeView) Users() (users, connections, disposed int) {
	s := v.g.users.Stats()
	return s.Users, s.Connections, s.Disposed
}

func (v gaugeView) PausesInFlight() int {
	if v.g.judge == nil {
		return 0
	}
	return v.g.judge.InFlight()
}

func (v gaugeView) Ready() bool          { return v.g.ready.Load() }
func (v gaugeView) Bounds() bounds.Stats { return boundsStats(v) }
