package bounds

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdpguard/cdpguard/internal/relay"
)

func TestLimitsRelay(t *testing.T) {
	b := Limits{AgentQueueBytes: 64 << 20, UserQueueBytes: 32 << 20, WriteTimeout: 3 * time.Second}.Relay()
	if b.AgentQueueBytes != 8<<20 || b.AgentMaxBytes != 64<<20 || b.UserQueueBytes != 8<<20 || b.UserMaxBytes != 32<<20 || b.PauseBound != 3*time.Second {
		t.Errorf("%+v", b)
	}
	if b.MaxMessage != min(relay.DefaultMaxMessage, 32<<20) {
		t.Errorf("MaxMessage %d", b.MaxMessage)
	}
	if small := (Limits{AgentQueueBytes: 1 << 10}).Relay(); small.MaxMessage != 512 {
		t.Errorf("a small agent bound: MaxMessage %d, want half of it", small.MaxMessage)
	}
	if Cap(0, 8) != 8 || Cap(-1, 8) != 0 || Cap(3, 8) != 3 {
		t.Error("Cap")
	}
}

type stats struct{}

func (stats) QueuedBytes() (int64, int64)    { return 30, 20 }
func (stats) TabStats() (int, int)           { return 5, 2 }
func (stats) ReceivingBytes() (int64, int64) { return 7, 6 }

// value returns the sum of the samples of the metric name in reg, and how
// many series it has.
func value(t *testing.T, reg *prometheus.Registry, name string) (float64, int) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		sum := 0.0
		for _, m := range mf.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
		return sum, len(mf.GetMetric())
	}
	t.Fatalf("no metric %s", name)
	return 0, 0
}

// TestMetrics: a cut-off counts in the total and by bound; the gauges read
// the current Stats and 0 without one.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	var cur Stats
	m := NewMetrics(reg, func() Stats { return cur })
	m.OnCutOff(slog.New(slog.DiscardHandler), "a", "u")(relay.CutPaused, "slow")
	m.CutOff(CutWriteStall)
	m.Capped("tabs")
	m.Throttled()
	m.Dropped("event")
	m.MCPRefused("sessions")
	if v, _ := value(t, reg, "cdpguard_agents_cut_off_total"); v != 2 {
		t.Errorf("cut off total %v", v)
	}
	if v, n := value(t, reg, "cdpguard_agents_cut_off_by_bound_total"); v != 2 || n != 8 {
		t.Errorf("cut off by bound: %v over %d series", v, n)
	}
	if v, _ := value(t, reg, "cdpguard_agent_queued_bytes"); v != 0 {
		t.Errorf("queued without stats: %v", v)
	}
	cur = stats{}
	for name, want := range map[string]float64{
		"cdpguard_agent_queued_bytes": 30, "cdpguard_user_queued_bytes_max": 20,
		"cdpguard_user_tabs_max": 5, "cdpguard_users_at_tab_cap": 2,
		"cdpguard_cap_refused_total": 1, "cdpguard_agents_throttled_total": 1, "cdpguard_agent_messages_dropped_total": 1,
		"cdpguard_receiving_bytes": 7, "cdpguard_user_receiving_bytes_max": 6, "cdpguard_mcp_refused_total": 1,
	} {
		if v, _ := value(t, reg, name); v != want {
			t.Errorf("%s = %v, want %v", name, v, want)
		}
	}
}
