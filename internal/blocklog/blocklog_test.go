package blocklog

import (
	"bytes"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
)

// record captures the one JSON line a call writes.
func record(t *testing.T, write func(*slog.Logger)) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	write(slog.New(slog.NewJSONHandler(&buf, nil)))
	lines := bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("want exactly one line, got %d: %s", len(lines), buf.String())
	}
	var m map[string]any
	if err := jsonv2.Unmarshal(lines[0], &m); err != nil {
		t.Fatalf("line is not JSON: %v: %s", err, lines[0])
	}
	delete(m, "time")
	return m
}

func TestFetchLine(t *testing.T) {
	b := fetchdomain.Block{URL: "https://evil.test:8443/x?q=1", Reason: "host not in allowlist", ResourceType: "Script", FrameID: "F1"}
	for _, c := range []struct {
		name   string
		owned  bool
		user   string
		target string
	}{
		{"owned by a tab", true, "alice", "F1"},
		// Not a tab's main frame: neither the user nor the target is known,
		// and the frame id must not be passed off as a target.
		{"not owned", false, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := record(t, func(l *slog.Logger) { Fetch(l, b, "alice", c.owned) })
			want := map[string]any{
				"level": "INFO", "msg": Msg,
				FieldURL: b.URL, FieldHost: "evil.test", FieldReason: b.Reason,
				FieldResourceType: "Script", FieldUser: c.user, FieldTarget: c.target,
				FieldLayer: LayerFetch,
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("line = %v\nwant   %v", got, want)
			}
		})
	}
}

func TestFetchLineUnparsableURL(t *testing.T) {
	got := record(t, func(l *slog.Logger) {
		Fetch(l, fetchdomain.Block{URL: "http://[::1", Reason: "bad"}, "", false)
	})
	if got[FieldHost] != "" || got[FieldURL] != "http://[::1" {
		t.Errorf("unparsable URL: host %q url %q, want empty host and the URL as given", got[FieldHost], got[FieldURL])
	}
}

func TestProxyLine(t *testing.T) {
	for _, c := range []struct {
		name    string
		r       egress.Refusal
		user    string
		wantURL string
	}{
		{"host and port", egress.Refusal{Host: "evil.test", Port: 443, Reason: "not allowed"}, "bob", "evil.test:443"},
		{"IPv6 literal", egress.Refusal{Host: "::1", Port: 80, Reason: "private"}, "", "[::1]:80"},
		{"port unknown", egress.Refusal{Host: "evil.test", Reason: "not allowed"}, "", "evil.test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := record(t, func(l *slog.Logger) { Proxy(l, c.r, c.user) })
			want := map[string]any{
				"level": "INFO", "msg": Msg,
				FieldURL: c.wantURL, FieldHost: c.r.Host, FieldReason: c.r.Reason,
				FieldResourceType: "Connection", FieldUser: c.user, FieldTarget: "",
				FieldLayer: LayerEgressProxy,
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("line = %v\nwant   %v", got, want)
			}
		})
	}
}

// TestLongIDsCut: a user key and a target id as long as a header may make
// them are cut to clip.Max bytes in the line.
func TestLongIDsCut(t *testing.T) {
	long := strings.Repeat("u", 4096)
	m := record(t, func(l *slog.Logger) {
		Fetch(l, fetchdomain.Block{URL: "https://evil.test/", Reason: "r", FrameID: long}, long, true)
	})
	if u, _ := m[FieldUser].(string); u != long[:clip.Max] {
		t.Errorf("user is %d bytes, want %d", len(u), clip.Max)
	}
	if tg, _ := m[FieldTarget].(string); tg != long[:clip.Max] {
		t.Errorf("target is %d bytes, want %d", len(tg), clip.Max)
	}
}
