package controls

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestClickRefusal(t *testing.T) {
	now := time.Now()
	for payload, want := range map[string]string{
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow h for this session","timed":true,"sentAt":1}`:  "",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":null,"label":"Allow h for this session","timed":true,"sentAt":1}`:  "", // no IntersectionObserver v2
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow h for this session","timed":true}`:             "did not say when it was sent",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow h for this session","timed":true,"sentAt":-1}`: "did not say when it was sent",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow h for this session"}`:                          "later than the page's clock",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Close"}`:                                             "text was changed",
		`{"action":"allow","trusted":false,"active":true,"armed":true,"visible":true}`:                                                            "not a trusted input event",
		`{"action":"allow","trusted":true,"active":false,"armed":true,"visible":true}`:                                                            "no user activation",
		`{"action":"allow","trusted":true,"active":true,"armed":false,"visible":true}`:                                                            "before it was shown",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":false}`:                                                            "covered",
		`{"action":"grant","trusted":true,"active":true,"armed":true}`:                                                                            "unknown action",
		`{"action":"allow","trusted":true,"trusted":true}`:                                                                                        "unreadable", // duplicate keys
		`not json`: "unreadable",
	} {
		got, _ := clickRefusal(payload, "Allow h for this session", now)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("clickRefusal(%s) = %q, want %q", payload, got, want)
		}
	}
}

// TestClickWaited: the report's wait moves the quiet window's end back to
// the click; nothing it says moves it later or overflows.
func TestClickWaited(t *testing.T) {
	for ms, want := range map[float64]time.Duration{
		0: 0, -5: 0, math.NaN(): 0, math.Inf(-1): 0,
		1500: 1500 * time.Millisecond, 0.5: 500 * time.Microsecond,
		math.Inf(1): maxWaited, 1e300: maxWaited,
	} {
		if got := clickWaited(ms); got != want {
			t.Errorf("clickWaited(%v) = %v, want %v", ms, got, want)
		}
	}
	now := time.UnixMilli(1_000_000)
	_, w := clickRefusal(`{"action":"allow","trusted":true,"active":true,"armed":true,"label":"x","waited":1200,"sentAt":1000000}`, "x", now)
	if w != 1200*time.Millisecond {
		t.Errorf("waited from a report: %v, want 1.2s", w)
	}
}

// TestClickTransit: the report's way to the guard counts as time before
// its arrival, so the quiet window is measured to the click even when the
// report comes late (e2e TestTimed/RedTeamControls/quiet-while-blocked
// granted on a loaded machine without it); a browser clock ahead of the
// guard's moves nothing, and nothing overflows.
func TestClickTransit(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for sentAt, want := range map[float64]time.Duration{
		1_000_000: 0, 1_000_500: 0, 999_600: 400 * time.Millisecond, 999_999.5: 500 * time.Microsecond,
		math.NaN(): 0, math.Inf(1): 0, math.Inf(-1): maxWaited, -1e300: maxWaited, 1: maxWaited,
	} {
		if got := clickTransit(sentAt, now); got != want {
			t.Errorf("clickTransit(%v) = %v, want %v", sentAt, got, want)
		}
	}
	// A click that waited 300 ms for the handler, reported 400 ms later:
	// it happened 700 ms before the report arrived.
	_, w := clickRefusal(`{"action":"allow","trusted":true,"active":true,"armed":true,"label":"x","timed":true,"waited":300,"sentAt":999600}`, "x", now)
	if w != 700*time.Millisecond {
		t.Errorf("waited and transit: %v, want 700ms", w)
	}
	_, w = clickRefusal(`{"action":"allow","trusted":true,"active":true,"armed":true,"label":"x","timed":true,"waited":500000,"sentAt":1}`, "x", now)
	if w != maxWaited {
		t.Errorf("waited and transit over the bound: %v, want %v", w, maxWaited)
	}
}
