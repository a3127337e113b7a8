package cdpguard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func launch(t *testing.T, cfg Config) *Guard {
	t.Helper()
	needBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if cfg.Allow == nil {
		cfg.Allow = []string{"allowed.test"}
	}
	g, err := Launch(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func get(t *testing.T, url string, hdr map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	resp := do(t, req, hdr)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// do sends req with the headers hdr ("Host" sets the request's Host).
func do(t *testing.T, req *http.Request, hdr map[string]string) *http.Response {
	t.Helper()
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
	return resp
}

// TestHTTPSurface checks the endpoints and the rules that keep web pages
// from driving the guard.
func TestHTTPSurface(t *testing.T) {
	g := launch(t, Config{PublicHosts: []string{"cdpguard"}})
	base := g.URL()
	for _, p := range []string{"/json/version", "/json/version/", "/some/prefix/json/version"} {
		code, body := get(t, base+p, nil)
		if code != 200 || !strings.Contains(body, `"webSocketDebuggerUrl":"ws://`+strings.TrimPrefix(base, "http://")+`/devtools/browser/`) {
			t.Errorf("%s: %d %s", p, code, body)
		}
	}
	if code, body := get(t, base+"/json/version", map[string]string{"Host": "cdpguard:9222"}); code != 200 || !strings.Contains(body, "ws://cdpguard:9222/devtools/browser/") {
		t.Errorf("public host: %d %s", code, body)
	}
	if code, _ := get(t, base+"/json/version", map[string]string{"Host": "evil.example:9222"}); code != http.StatusForbidden {
		t.Errorf("foreign Host header: %d, want 403", code)
	}
	for p, want := range map[string]string{"/readyz": "ok", "/healthz": "ok", "/policy": `"allowed":["allowed.test"]`, "/json/list": "[]", "/metrics": "cdpguard_ready 1"} {
		if code, body := get(t, base+p, nil); code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q, want %q", p, code, body, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, g.WebSocketURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://evil.test"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("upgrade with Origin: err %v, resp %v; want 403", err, resp)
	}
	// Another instance's browser id is accepted: behind a load balancer
	// /json/version and the WebSocket may reach different instances.
	c, _, err := websocket.Dial(ctx, strings.Replace(g.WebSocketURL(), g.about.id, "another-instance", 1), nil)
	if err != nil {
		t.Errorf("foreign browser id: %v; want a connection", err)
	} else {
		_ = c.CloseNow()
	}
	_, resp, err = websocket.Dial(ctx, strings.Replace(g.WebSocketURL(), g.about.id, "a/b", 1), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("bad browser id: err %v; want 404", err)
	}
}

// TestRequireSessionHeader refuses agents without the header.
func TestRequireSessionHeader(t *testing.T) {
	g := launch(t, Config{RequireSessionHeader: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, resp, err := websocket.Dial(ctx, g.WebSocketURL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no header: err %v; want 401", err)
	}
	// Each distinct user gets a fairness share while connected, and gives
	// it back when its last connection ends (memory follows the users
	// connected now, not every header value ever seen).
	const users = 20
	for i := range users {
		c, _, err := websocket.Dial(ctx, g.WebSocketURL(), &websocket.DialOptions{HTTPHeader: http.Header{"X-LibreChat-User": {fmt.Sprintf("u%d", i)}}})
		if err != nil {
			t.Fatal(err)
		}
		c.CloseNow()
	}
	for g.agents.Shares().Held() != 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d users' shares still held after all their connections closed", g.agents.Shares().Held())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n := g.agents.Shares().Len(); n > users {
		t.Fatalf("%d shares kept for %d users", n, users)
	}
}

// TestBrowserLostClosesAgents: when the browser dies, every agent
// connection is closed and the guard stops (fail closed).
func TestBrowserLostClosesAgents(t *testing.T) {
	g := launch(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, g.WebSocketURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"id":1,"method":"Browser.getVersion"}`)); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := c.Read(ctx); err != nil || !strings.Contains(string(msg), `"id":1`) {
		t.Fatalf("first reply: %s %v", msg, err)
	}
	if err := syscall.Kill(-g.proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := c.Read(ctx); err != nil {
			if ctx.Err() != nil {
				t.Fatal("agent connection still open after the browser died")
			}
			break
		}
	}
	select {
	case <-g.Done():
	case <-ctx.Done():
		t.Fatal("guard did not stop after the browser died")
	}
	if resp, err := http.Get(g.URL() + "/readyz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("readyz still ok after the browser died")
		}
	}
}
