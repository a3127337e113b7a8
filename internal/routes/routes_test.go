package routes

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/cdpguard/cdpguard/internal/httpgate"
)

// TestRoutes: each path reaches its handler, bad ids are 404 before any
// upgrade, and a request a web page could have made is refused first.
func TestRoutes(t *testing.T) {
	var got, target string
	mark := func(name string) http.HandlerFunc {
		return func(http.ResponseWriter, *http.Request) { got = name }
	}
	ready := false
	rt := &Table{
		Gate:    func() httpgate.Gate { return httpgate.Gate{} },
		Ready:   func() bool { return ready },
		Policy:  mark("policy"),
		Read:    mark("read"),
		Metrics: mark("metrics"),
		MCP:     mark("mcp"),
		Agent: func(_ http.ResponseWriter, _ *http.Request, id string) {
			got, target = "agent", id
		},
	}
	for _, c := range []struct {
		path, want, target string
		code               int
	}{
		{"/policy", "policy", "", 200},
		{"/read", "read", "", 200},
		{"/metrics", "metrics", "", 200},
		{"/mcp", "mcp", "", 200},
		{"/mcp/", "mcp", "", 200},
		{"/devtools/browser/anything", "agent", "", 200},
		{"/devtools/page/T1", "agent", "T1", 200},
		{"/devtools/page/", "", "", 404},
		{"/devtools/browser/a/b", "", "", 404},
		{"/nope", "", "", 404},
		{"/healthz", "", "", 200},
		{"/readyz", "", "", 503},
	} {
		got, target = "", ""
		rec := httptest.NewRecorder()
		rt.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9222"+c.path, nil))
		if got != c.want || target != c.target || rec.Code != c.code {
			t.Errorf("%s: handler %q target %q code %d, want %q %q %d", c.path, got, target, rec.Code, c.want, c.target, c.code)
		}
	}
	ready = true
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9222/readyz", nil))
	if rec.Code != 200 {
		t.Errorf("/readyz when ready: %d", rec.Code)
	}
	got = ""
	rec = httptest.NewRecorder()
	rt.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://evil.test/policy", nil))
	if got != "" || rec.Code == 200 {
		t.Errorf("a request with a web Host reached %q (%d)", got, rec.Code)
	}
}
