package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestUserCaps is issue 32's caps on users, against a real guard and
// Chromium at small caps: 3 users, a 64-byte session header, 2 connections
// per user, and new users in a burst of 3 with (practically) no refill. A
// 4th user is refused naming the cap, over WebSocket and over MCP, while
// the first three keep working; an over-long header is refused and makes
// no user, and a 256 kB header block is refused before its end; a user's
// 3rd connection is refused while its others keep working; past 4 tabs of
// all users (--max-tabs) a tab is refused and a popup closed, naming the
// cap; once a place is free, a burst of new users past the rate is
// refused and counted. Every refusal is counted by cap in
// cdpguard_cap_refused_total.
func TestUserCaps(t *testing.T) {
	parallelSuite(t)
	h := testhosts.Start(t)
	g := userGuard(t, func(c *cdpguard.Config) {
		c.MaxUsers, c.SessionHeaderBytes, c.MaxConnsPerUser, c.MaxTabs = 3, 64, 2, 4
		c.NewUsersPerSecond, c.NewUsersBurst = 0.001, 3
		c.SessionIdle = time.Second // a user with no connection goes soon
	})
	ws, base := g.WebSocketURL(), g.URL()

	// Three users, each with a page.
	clients := map[string]*cdptest.Client{}
	sessions := map[string]string{}
	for _, who := range []string{"cap-a", "cap-b", "cap-c"} {
		clients[who] = cdptest.DialUser(t, ws, who, cdptest.Options{Record: true})
		_, sessions[who] = clients[who].OpenPage(t, userURL(h, who))
	}
	alive := func(who string) {
		t.Helper()
		if got, err := clients[who].Eval(sessions[who], "6*7"); err != nil || got != "42" {
			t.Fatalf("%s's page: %q, %v; want 42", who, got, err)
		}
	}
	waitGauge(t, base, "cdpguard_users", 3)

	t.Run("users", func(t *testing.T) {
		code, body := dialRefused(t, ws, "cap-d")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-users=3") {
			t.Fatalf("a 4th user: %d %q; want 503 naming --max-users=3", code, body)
		}
		for _, who := range []string{"cap-a", "cap-b", "cap-c"} {
			alive(who)
		}
		// The MCP server keys users by the same header and is refused the same way.
		s := mcpConnect(t, base, "cap-mcp")
		mustContain(t, "a 4th user over MCP", call(t, s, "browser_navigate", map[string]any{"url": userURL(h, "cap-mcp")}, true), "--max-users=3")
		if got := capRefused(t, base, "users"); got != 2 {
			t.Errorf(`cdpguard_cap_refused_total{cap="users"} = %v, want 2`, got)
		}
		if got := metricValue(t, base, "cdpguard_users"); got != 3 {
			t.Errorf("cdpguard_users = %v after the refusals, want 3", got)
		}
	})

	t.Run("header", func(t *testing.T) {
		long := strings.Repeat("h", 65)
		code, body := dialRefused(t, ws, long)
		if code != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(body, cdpguard.DefaultSessionHeader) || !strings.Contains(body, "64") || strings.Contains(body, long) {
			t.Fatalf("a 65-byte header: %d %q; want 431 naming the header and the cap, not quoting it", code, body)
		}
		if got := userStatus(t, base+"/json/list", long); got != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("/json/list with a 65-byte header: %d, want 431", got)
		}
		// A header block past httpgate.MaxHeaderBytes is refused before its
		// end, not held until the header deadline.
		if got := stalledHeader(t, base, 256<<10); got != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a 256 kB header stalled short of its end: %d, want 431", got)
		}
		if got := capRefused(t, base, "session_header_bytes"); got != 2 {
			t.Errorf(`cdpguard_cap_refused_total{cap="session_header_bytes"} = %v, want 2`, got)
		}
		// Neither a user nor a context was made for it: the users cap
		// (checked after the header) saw nothing, and the users are three.
		if got := capRefused(t, base, "users"); got != 2 {
			t.Errorf(`cdpguard_cap_refused_total{cap="users"} = %v, want 2 (the header's refusal went further)`, got)
		}
		if got := metricValue(t, base, "cdpguard_users"); got != 3 {
			t.Errorf("cdpguard_users = %v, want 3", got)
		}
		alive("cap-a")
	})

	t.Run("connections", func(t *testing.T) {
		second := cdptest.DialUser(t, ws, "cap-a", cdptest.Options{Record: true})
		if _, err := second.CallWithin("", "Browser.getVersion", nil, 15*time.Second); err != nil {
			t.Fatalf("cap-a's 2nd connection: %v", err)
		}
		code, body := dialRefused(t, ws, "cap-a")
		if code != http.StatusTooManyRequests || !strings.Contains(body, "--max-connections-per-user=2") {
			t.Fatalf("cap-a's 3rd connection: %d %q; want 429 naming --max-connections-per-user=2", code, body)
		}
		alive("cap-a")
		if _, err := second.CallWithin("", "Browser.getVersion", nil, 15*time.Second); err != nil {
			t.Fatalf("cap-a's 2nd connection after the refusal: %v", err)
		}
		if got := capRefused(t, base, "connections_per_user"); got != 1 {
			t.Errorf(`cdpguard_cap_refused_total{cap="connections_per_user"} = %v, want 1`, got)
		}
		second.Close()
	})

	t.Run("tabs", func(t *testing.T) {
		// Three users with a tab each, and --max-tabs=4.
		if _, err := clients["cap-a"].CallWithin("", "Target.createTarget", map[string]any{"url": "about:blank"}, 15*time.Second); err != nil {
			t.Fatalf("cap-a's 4th tab of 4: %v", err)
		}
		_, err := clients["cap-b"].CallWithin("", "Target.createTarget", map[string]any{"url": "about:blank"}, 15*time.Second)
		if err == nil || !strings.Contains(err.Error(), "--max-tabs=4") {
			t.Fatalf("cap-b's tab past --max-tabs: %v, want a refusal naming --max-tabs=4", err)
		}
		// A popup past it is closed at once, its opener's connection told.
		b := clients["cap-b"]
		if _, err := b.CallWithin("", "Guard.enable", nil, 15*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := b.CallWithin(sessions["cap-b"], "Runtime.evaluate", map[string]any{"expression": "window.open('about:blank#popup'); 1", "userGesture": true}, 15*time.Second); err != nil {
			t.Fatal(err)
		}
		ev, ok := b.WaitEvent(20*time.Second, func(m cdptest.Message) bool { return m.Method == "Guard.targetRefused" })
		if !ok {
			t.Fatal("no Guard.targetRefused for a popup past --max-tabs within 20 s")
		}
		if !strings.Contains(string(ev.Params), "--max-tabs=4") {
			t.Errorf("Guard.targetRefused = %s, want the cap named", ev.Params)
		}
		if got := capRefused(t, base, "tabs_total"); got != 2 {
			t.Errorf(`cdpguard_cap_refused_total{cap="tabs_total"} = %v, want 2`, got)
		}
		for _, who := range []string{"cap-a", "cap-b", "cap-c"} {
			alive(who)
		}
	})

	t.Run("rate", func(t *testing.T) {
		// cap-c leaves; with --session-idle 1 s its place is free soon.
		clients["cap-c"].Close()
		waitGauge(t, base, "cdpguard_users", 2)
		const burst = 4
		var wg sync.WaitGroup
		codes, bodies := make([]int, burst), make([]string, burst)
		for i := range burst {
			wg.Go(func() { codes[i], bodies[i] = dialRefused(t, ws, fmt.Sprintf("cap-new-%d", i)) })
		}
		wg.Wait()
		for i := range burst {
			if codes[i] != http.StatusTooManyRequests || !strings.Contains(bodies[i], "--new-users-per-second=0.001") {
				t.Errorf("new user %d past the rate: %d %q; want 429 naming --new-users-per-second", i, codes[i], bodies[i])
			}
		}
		if got := capRefused(t, base, "new_users_rate"); got != burst {
			t.Errorf(`cdpguard_cap_refused_total{cap="new_users_rate"} = %v, want %d`, got, burst)
		}
		if got := metricValue(t, base, "cdpguard_users"); got != 2 {
			t.Errorf("cdpguard_users = %v, want 2 (no refused user made)", got)
		}
		alive("cap-a")
		alive("cap-b")
	})
	if n := h.Forbidden.Total(); n > 0 {
		t.Errorf("forbidden host was reached %d times: %v", n, h.Forbidden.Log())
	}
}

// dialRefused opens a browser WebSocket as user, which the guard must
// refuse before the upgrade: it returns the status and body of the
// refusal (the test fails when the upgrade succeeds).
func dialRefused(t *testing.T, ws, user string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{cdpguard.DefaultSessionHeader: {user}}})
	if err == nil {
		c.CloseNow()
		t.Errorf("user %.20q: the upgrade succeeded, want a refusal", user)
		return http.StatusSwitchingProtocols, ""
	}
	if resp == nil {
		t.Errorf("user %.20q: no answer: %v", user, err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// userStatus is the status of a GET of u with the user header.
func userStatus(t *testing.T, u, user string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(cdpguard.DefaultSessionHeader, user)
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

var capLine = regexp.MustCompile(`(?m)^cdpguard_cap_refused_total\{cap="([a-z_]+)"\} ([0-9.e+]+)$`)

// capRefused reads cdpguard_cap_refused_total{cap=c} (0 when absent).
func capRefused(t *testing.T, base, c string) float64 {
	t.Helper()
	for _, m := range capLine.FindAllStringSubmatch(httpBody(t, base+"/metrics", ""), -1) {
		if m[1] == c {
			v, _ := strconv.ParseFloat(m[2], 64)
			return v
		}
	}
	return 0
}

// waitGauge waits, at most 15 s, until the unlabelled gauge name is want.
func waitGauge(t *testing.T, base, name string, want float64) {
	t.Helper()
	var got float64
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if got = metricValue(t, base, name); got == want {
			return
		}
	}
	t.Fatalf("%s = %v, want %v", name, got, want)
}
