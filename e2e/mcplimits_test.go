package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestMCPLimits: issue 32 items 5 and 6 and the first-navigation dialog,
// at scaled-down caps (the same code as the defaults of 8 sessions per
// user, 256 in all, 8 bodies per user and 64 at once, 10 s a body): an
// initialize loop past the session caps is refused naming them while an
// open session keeps working; slow bodies past the body caps are refused
// naming them, stalled ones at their deadline, and the open session's
// requests are read beside them; an alert while
// browser_navigate loads the first tab ends the call saying so and is
// answered with browser_handle_dialog.
func TestMCPLimits(t *testing.T) {
	parallelSuite(t)
	h := testhosts.Start(t)
	g := userGuard(t, func(c *cdpguard.Config) {
		c.MCPMaxSessionsPerUser, c.MCPMaxSessions = 3, 6
		c.MCPMaxBodiesPerUser, c.MCPMaxBodies = 2, 3
		// The stalled bodies must outlast both probes' second of grace and
		// the waits between them (a loaded run took over 3 s), then answer.
		c.MCPBodyTimeout = 8 * time.Second
	})
	base := g.URL()
	keeper := mcpConnect(t, base, "limits-keeper")
	page := func(p string) string { return h.PageURL("/mcp/" + p) }

	t.Run("dialog", func(t *testing.T) {
		s := mcpConnect(t, base, "limits-dialog") // its first call opens its first tab
		out := call(t, s, "browser_navigate", map[string]any{"url": page("loadalert.html")}, false)
		mustContain(t, "navigate with an alert", out, "alert", "LOAD-ALERT while loading", "browser_handle_dialog")
		if strings.Contains(out, "select its tab") {
			t.Errorf("the first tab's alert was reported as another tab's: %s", out)
		}
		call(t, s, "browser_handle_dialog", map[string]any{"accept": true}, false)
		call(t, s, "browser_wait_for", map[string]any{"text": "LOADALERT-MARKER"}, false)
	})

	t.Run("sessions", func(t *testing.T) {
		call(t, keeper, "browser_navigate", map[string]any{"url": page("article.html")}, false)
		// The loop's user gets three, then the per-user cap.
		for i := range 3 {
			if code, body := initializeRaw(t, base, "limits-loop"); code != http.StatusOK {
				t.Fatalf("initialize %d of the loop: %d %s", i, code, body)
			}
		}
		code, body := initializeRaw(t, base, "limits-loop")
		if code != http.StatusTooManyRequests || !strings.Contains(body, "sessions_per_user") {
			t.Fatalf("initialize past the per-user cap: %d %s", code, body)
		}
		// Other users fill the rest (the dialog suite's session may have
		// ended by now), up to the total.
		for i := 2; ; i++ {
			code, body := initializeRaw(t, base, fmt.Sprintf("limits-loop-%d", i))
			if code == http.StatusServiceUnavailable && strings.Contains(body, "(sessions)") {
				break
			}
			if code != http.StatusOK || i > 6 {
				t.Fatalf("initialize as user %d of the loop: %d %s", i, code, body)
			}
		}
		// Past the total, as the MCP SDK's client sees it.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		if s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: headerRT{"limits-loop-new"}}}, nil); err == nil {
			_ = s.Close()
			t.Fatal("a session past the total cap was opened")
		} else {
			t.Logf("the MCP client's error past the total cap: %v", err)
		}
		mustContain(t, "the open session past the caps", call(t, keeper, "browser_read", nil, false), "ARTICLE-BODY-MARKER")
		metrics := httpBody(t, base+"/metrics", "")
		if n := labelledMetric(metrics, "cdpguard_mcp_refused_total", "cap", "sessions_per_user"); n != 1 {
			t.Errorf("sessions_per_user refusals counted: %d, want 1", n)
		}
		if n := labelledMetric(metrics, "cdpguard_mcp_refused_total", "cap", "sessions"); n < 1 {
			t.Errorf("sessions refusals counted: %d, want at least 1", n)
		}
	})

	t.Run("bodies", func(t *testing.T) {
		r0 := metricValue(t, base, "cdpguard_receiving_bytes")
		a1 := stallBody(t, base, "limits-stall")
		a2 := stallBody(t, base, "limits-stall")
		waitReceiving(t, base, r0+2*stalledReserve)
		slowBodyRefused(t, base, "limits-stall", http.StatusTooManyRequests, "bodies_per_user")
		b1 := stallBody(t, base, "limits-stall-2")
		waitReceiving(t, base, r0+3*stalledReserve)
		slowBodyRefused(t, base, "limits-stall-3", http.StatusServiceUnavailable, "bodies")
		// The stalled bodies hold every slot; a request that arrives at
		// once needs none.
		mustContain(t, "the open session beside the stalled bodies", call(t, keeper, "browser_read", nil, false), "ARTICLE-BODY-MARKER")
		for i, r := range []*bufio.Reader{a1, a2, b1} {
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("stalled body %d: no answer: %v", i, err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(got), "body_timeout") {
				t.Errorf("stalled body %d: %d %s, want 408 naming body_timeout", i, resp.StatusCode, got)
			}
		}
		mustContain(t, "the open session after the stalled bodies", call(t, keeper, "browser_read", nil, false), "ARTICLE-BODY-MARKER")
		if n := labelledMetric(httpBody(t, base+"/metrics", ""), "cdpguard_mcp_refused_total", "cap", "body_timeout"); n != 3 {
			t.Errorf("body_timeout refusals counted: %d, want 3", n)
		}
	})
	if n := h.Forbidden.Total(); n > 0 {
		t.Errorf("forbidden host was reached: %d requests", n)
	}
}

// initializeRaw posts an MCP initialize as user and returns the status and
// body.
func initializeRaw(t *testing.T, base, user string) (int, string) {
	t.Helper()
	const body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"loop","version":"1"}}}`
	return mcpRaw(t, base, user, "", body)
}

// mcpRaw posts body to /mcp as user (in session when set).
func mcpRaw(t *testing.T, base, user, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(cdpguard.DefaultSessionHeader, user)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b)
}

// stalledBytes is the length of stallBody's body, and stalledReserve what
// the guard reserves for it from the byte budget (its length and one).
const (
	stalledBytes   = 4000
	stalledReserve = stalledBytes + 1
)

// stallBody posts to /mcp as user a body that stops 100 bytes short (in a
// session id of its own, so no session is being made) and returns the
// connection the answer arrives on (read bounded at 30 s).
func stallBody(t *testing.T, base, user string) *bufio.Reader {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	body := strings.Repeat(" ", stalledBytes)
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n%s: %s\r\nMcp-Session-Id: stalled\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, cdpguard.DefaultSessionHeader, user, len(body), body[:len(body)-100])
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // a hang guard
	return bufio.NewReader(c)
}

// waitReceiving waits until the guard has reserved at least want bytes
// for what it is receiving (cdpguard_receiving_bytes), bounded at 10 s:
// the stalled bodies have reached the guard and hold their slots (a body
// takes its slot, if one is free, before it reserves its bytes).
func waitReceiving(t *testing.T, base string, want float64) {
	t.Helper()
	var got float64
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got = metricValue(t, base, "cdpguard_receiving_bytes"); got >= want {
			return
		}
	}
	t.Fatalf("cdpguard_receiving_bytes = %v, want at least %v: the stalled bodies did not reach the guard", got, want)
}

// slowBodyRefused posts a stalled body as user, which must be refused
// with status naming cap: the stalled bodies before it hold the slots,
// and without one a body has a second to arrive.
func slowBodyRefused(t *testing.T, base, user string, status int, cap string) {
	t.Helper()
	resp, err := http.ReadResponse(stallBody(t, base, user), nil)
	if err != nil {
		t.Fatalf("as %s: no answer to a slow body: %v", user, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status || !strings.Contains(string(got), "("+cap+")") {
		t.Fatalf("a slow body as %s: %d %s, want %d naming %s", user, resp.StatusCode, got, status, cap)
	}
}
