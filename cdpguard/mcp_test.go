package cdpguard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func postMCP(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode, b.String()
}

// TestMCPEndpoint: /mcp has no auth gate (never 401), names a missing
// required user header with a 400, takes --public-host names, and is
// refused to web pages like every endpoint path.
func TestMCPEndpoint(t *testing.T) {
	g := launch(t, Config{PublicHosts: []string{"cdpguard"}, RequireSessionHeader: true})
	u := g.URL() + "/mcp"
	code, body := postMCP(t, u, nil)
	if code != http.StatusBadRequest || !strings.Contains(body, "X-LibreChat-User") {
		t.Errorf("no user header: %d %s", code, body)
	}
	user := map[string]string{"X-LibreChat-User": "u1"}
	if code, body := postMCP(t, u, user); code != http.StatusOK || !strings.Contains(body, "allowed.test") {
		t.Errorf("initialize: %d %s", code, body)
	}
	if code, body := postMCP(t, u, map[string]string{"X-LibreChat-User": "u1", "Host": "cdpguard:9222"}); code != http.StatusOK {
		t.Errorf("initialize with a --public-host Host: %d %s", code, body)
	}
	for name, h := range map[string]map[string]string{
		"origin":    {"X-LibreChat-User": "u1", "Origin": "http://evil.example"},
		"fetchSite": {"X-LibreChat-User": "u1", "Sec-Fetch-Site": "cross-site"},
		"host":      {"X-LibreChat-User": "u1", "Host": "evil.example"},
	} {
		if code, body := postMCP(t, u, h); code != http.StatusForbidden {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}
}

func TestMCPOff(t *testing.T) {
	g := &Guard{cfg: Config{DisableMCP: true}}
	rec := httptest.NewRecorder()
	g.serveMCP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initializeBody)))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("--mcp=false: %d", rec.Code)
	}
}
