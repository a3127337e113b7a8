package controls

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestClickRefusal(t *testing.T) {
	for payload, want := range map[string]string{
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow h for this session","timed":true}`: "",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":null,"label":"Allow h for this session","timed":true}`: "", // no IntersectionObserver v2
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow h for this session"}`:              "later than the page's clock",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Close"}`:                                 "text was changed",
		`{"action":"allow","trusted":false,"active":true,"armed":true,"visible":true}`:                                                "not a trusted input event",
		`{"action":"allow","trusted":true,"active":false,"armed":true,"visible":true}`:                                                "no user activation",
		`{"action":"allow","trusted":true,"active":true,"armed":false,"visible":true}`:                                                "before it was shown",
		`{"action":"allow","trusted":true,"active":true,"armed":true,"visible":false}`:                                                "covered",
		`{"action":"grant","trusted":true,"active":true,"armed":true}`:                                                                "unknown action",
		`{"action":"allow","trusted":true,"trusted":true}`:                                                                            "unreadable", // duplicate keys
		`not json`: "unreadable",
	} {
		got, _ := clickRefusal(payload, "Allow h for this session")
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
	_, w := clickRefusal(`{"action":"allow","trusted":true,"active":true,"armed":true,"label":"x","waited":1200}`, "x")
	if w != 1200*time.Millisecond {
		t.Errorf("waited from a report: %v, want 1.2s", w)
	}
}
