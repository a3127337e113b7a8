package metrics

import "testing"

// TestShedCounter: the judge's shed counter is on the guard's registry, and
// a guard started again on the same registry keeps counting on it.
func TestShedCounter(t *testing.T) {
	m := New(func() View { return nil })
	m.PausesShed.Inc() // the first guard (the judge's OnShed)
	m.PausesShed.Inc() // a guard launched again with the same metrics
	mfs, err := m.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "cdpguard_paused_requests_shed_total" {
			if n := len(mf.GetMetric()); n != 1 {
				t.Fatalf("%d series, want 1", n)
			}
			if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 2 {
				t.Fatalf("counter = %v after two guards counted once each, want 2", v)
			}
			return
		}
	}
	t.Fatal("cdpguard_paused_requests_shed_total is not registered")
}
