package cdpguard

import "testing"

// TestShedCounterRegistered: the judge's shed counter is on /metrics.
func TestShedCounterRegistered(t *testing.T) {
	m := newMetrics(&Guard{})
	if !m.reg.Unregister(m.pausesShed) {
		t.Fatal("cdpguard_paused_requests_shed_total is not registered")
	}
}
