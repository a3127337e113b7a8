package cdpguard

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/blocklog"
	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// TestBlockedLine checks the canonical block log line: one line per refusal,
// msg "blocked", the same fixed keys for both layers, as JSON keys with a
// JSON handler (what --log-format json installs).
func TestBlockedLine(t *testing.T) {
	var buf bytes.Buffer
	g, err := newGuard(Config{Allow: []string{"allowed.test"}, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	g.logFetchBlock(fetchdomain.Block{URL: "https://evil.test:8443/x?y", Reason: `host "evil.test" is not in the allowlist`, ResourceType: "Fetch", FrameID: "F1"}, "", false)
	g.logProxyRefusal(egress.Refusal{Host: "evil.test", Port: 443, Reason: "not allowed", Method: "CONNECT"})
	for _, c := range [][2]string{{BlockedMsg, blocklog.Msg}, {FieldURL, blocklog.FieldURL}, {FieldHost, blocklog.FieldHost}, {FieldReason, blocklog.FieldReason}, {FieldResourceType, blocklog.FieldResourceType}, {FieldUser, blocklog.FieldUser}, {FieldTarget, blocklog.FieldTarget}, {FieldLayer, blocklog.FieldLayer}, {LayerFetch, blocklog.LayerFetch}, {LayerEgressProxy, blocklog.LayerEgressProxy}} {
		if c[0] != c[1] {
			t.Errorf("exported name %q, internal/blocklog writes %q", c[0], c[1])
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	want := []map[string]string{
		{"msg": "blocked", "url": "https://evil.test:8443/x?y", "host": "evil.test", "reason": `host "evil.test" is not in the allowlist`, "resource_type": "Fetch", "user": "", "target": "", "layer": "fetch"},
		{"msg": "blocked", "url": "evil.test:443", "host": "evil.test", "reason": "not allowed", "resource_type": "Connection", "user": "", "target": "", "layer": "egress-proxy"},
	}
	for i, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d is not JSON: %v: %s", i, err, line)
		}
		for k, v := range want[i] {
			if got[k] != v {
				t.Errorf("line %d: %s = %v, want %q (%s)", i, k, got[k], v, line)
			}
		}
	}
}

// TestOpsMetrics checks that /metrics exposes the operations metrics and
// that ToolCall keeps its labels bounded.
func TestOpsMetrics(t *testing.T) {
	g, err := newGuard(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	m := g.metrics
	m.ToolCall("browser_navigate", "ok")
	m.ToolCall("browser_navigate", "whatever")
	m.ToolCall(strings.Repeat("t", 500), "refused")
	m.Decision(300 * time.Microsecond)
	m.BrowserRestarts.Inc()
	g.countRefusal(relay.Command{Method: "Browser.crash", Browser: true}, relay.Verdict{Refuse: "no"})
	g.countRefusal(relay.Command{Method: "Runtime.evaluate"}, relay.Verdict{Refuse: "foreign session"})
	g.countRefusal(relay.Command{Method: "Runtime.evaluate"}, relay.Verdict{})
	rec := httptest.NewRecorder()
	m.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, s := range []string{
		`cdpguard_mcp_tool_calls_total{outcome="ok",tool="browser_navigate"} 1`,
		`cdpguard_mcp_tool_calls_total{outcome="error",tool="browser_navigate"} 1`,
		`cdpguard_mcp_tool_calls_total{outcome="refused",tool="` + strings.Repeat("t", 64) + `"} 1`,
		`cdpguard_decision_seconds_bucket{le="0.0005"} 1`,
		`cdpguard_browser_restarts_total 1`,
		`cdpguard_renderer_crashes_total 0`,
		`cdpguard_cdp_refused_total{rule="Browser.crash"} 1`,
		`cdpguard_cdp_refused_total{rule="isolation"} 1`,
		`cdpguard_pauses_in_flight 0`,
		`cdpguard_agents_cut_off_total 0`,
		`cdpguard_ready 0`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
}
