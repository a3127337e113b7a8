package cdpguard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func postMCP(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp := do(t, req, hdr)
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
	g, err := newGuard(Config{DisableMCP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	rec := httptest.NewRecorder()
	g.mcp.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initializeBody)))
	if rec.Code != http.StatusNotFound {
		t.Fatalf("--mcp=false: %d", rec.Code)
	}
}

// TestMCPSessionIdle: a user's MCP connection lets go of the browser
// context after the linger, so --session-idle disposes it as for CDP; and a
// guard that closes ends a tool call in flight instead of hanging it.
func TestMCPSessionIdle(t *testing.T) {
	g := launch(t, Config{SessionIdle: 400 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL() + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{"action": "new"}}); err != nil || res.IsError {
		t.Fatalf("browser_tabs new: %v %+v", err, res)
	}
	if st := g.users.Stats(); st.Users != 1 {
		t.Fatalf("users after the call: %+v", st)
	}
	for g.users.Stats().Disposed == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the idle MCP user's context was never disposed: %+v", g.users.Stats())
		case <-time.After(50 * time.Millisecond):
		}
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{"action": "list"}})
	if err != nil || res.IsError {
		t.Fatalf("after disposal: %v %+v", err, res)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, "No tabs") {
		t.Errorf("tabs after disposal: %s", txt)
	}

	// A call in flight (waiting for text that never comes) when the guard
	// closes ends, and so does Close.
	if res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{"action": "new"}}); err != nil || res.IsError {
		t.Fatalf("browser_tabs new: %v %+v", err, res)
	}
	ended := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_wait_for", Arguments: map[string]any{"text": "never there", "time": 25}})
		ended <- err
	}()
	time.Sleep(300 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("a tool call in flight outlived the guard's Close by 10 s")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with an MCP call in flight")
	}
}
