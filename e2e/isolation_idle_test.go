package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestIsolationRequireHeader checks --require-session-header: no header, no
// connection, with an HTTP error that names the header.
func TestIsolationRequireHeader(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	h := testhosts.Start(t)
	g := userGuard(t, func(c *cdpguard.Config) { c.RequireSessionHeader = true })
	if code, body := httpDo(t, http.MethodGet, g.URL()+"/json/list", ""); code != http.StatusUnauthorized || !strings.Contains(body, userHeader) {
		t.Errorf("/json/list without the header: %d %q, want 401 naming %s", code, body, userHeader)
	}
	if code, body := httpDo(t, http.MethodPut, g.URL()+"/json/new?about:blank", ""); code != http.StatusUnauthorized {
		t.Errorf("/json/new without the header: %d %q, want 401", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// /json/version needs no user (clients read it before connecting).
	if code, body := httpDo(t, http.MethodGet, g.URL()+"/json/version", ""); code != http.StatusOK {
		t.Fatalf("/json/version: %d %s", code, body)
	}
	ws := "ws" + strings.TrimPrefix(g.URL(), "http") + "/devtools/browser/"
	_, body := httpDo(t, http.MethodGet, g.URL()+"/json/version", "")
	var v struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || !strings.HasPrefix(v.WS, ws) {
		t.Fatalf("/json/version: %q %v", body, err)
	}
	c, resp, err := websocket.Dial(ctx, v.WS, nil)
	if err == nil {
		c.CloseNow()
		t.Fatal("WebSocket without the header was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("WebSocket without the header: %v (response %v), want 401", err, resp)
	} else {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<12))
		if !strings.Contains(string(b), userHeader) {
			t.Errorf("refusal body %q does not name the header", b)
		}
	}
	// The same client with the header works.
	bctx, _ := connectUser(t, g.URL(), "required-user")
	tab := newTab(t, bctx)
	if _, err := step(tab, 15*time.Second, chromedp.Navigate(userURL(h, "required-user"))); err != nil {
		t.Fatalf("navigate with the header: %v", err)
	}
	if _, list, _ := getList(t, g.URL(), "required-user"); !containsUser(list, "required-user") {
		t.Errorf("/json/list with the header: %q", list)
	}
}

// TestIsolationIdle checks idle disposal with a 1 s idle period: the
// user's tabs and storage are gone, a connected user is kept, and the next
// connection gets a fresh context.
func TestIsolationIdle(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	h := testhosts.Start(t)
	g := userGuard(t, func(c *cdpguard.Config) { c.SessionIdle = time.Second })
	const user = "idle-user"

	// A connected user is never disposed, however long.
	busy, _ := connectUser(t, g.URL(), "busy-user")
	busyTab := newTab(t, busy)
	if _, err := step(busyTab, 15*time.Second, chromedp.Navigate(userURL(h, "busy-user"))); err != nil {
		t.Fatal(err)
	}

	bctx, cancelConn := connectUser(t, g.URL(), user)
	tab, cancelTab := chromedp.NewContext(bctx)
	// As in newTab, the tab's first Do gets the tab context itself.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	if _, err := step(tab, 15*time.Second, chromedp.Navigate(userURL(h, user))); err != nil {
		t.Fatal(err)
	}
	if _, err := step(tab, 10*time.Second, chromedp.Evaluate[string](`localStorage.setItem("who","idle"), "ok"`)); err != nil {
		t.Fatal(err)
	}
	// A tab that outlives the connection.
	if code, body := httpDo(t, http.MethodPut, g.URL()+"/json/new?"+userURL(h, user+"-kept"), user); code != http.StatusOK {
		t.Fatalf("/json/new: %d %s", code, body)
	}
	if _, list, _ := getList(t, g.URL(), user); !containsUser(list, user+"-kept") {
		t.Fatalf("kept tab not listed: %q", list)
	}
	cancelTab()
	cancelConn()
	disconnected := time.Now()

	deadline := time.Now().Add(15 * time.Second)
	for {
		_, list, _ := getList(t, g.URL(), user)
		if !containsUser(list, user+"-kept") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("user's tabs still listed 15s after disconnecting with a 1s idle period: %q", list)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("context disposed %v after the last connection ended", time.Since(disconnected).Round(time.Millisecond))
	if _, body := httpDo(t, http.MethodGet, g.URL()+"/metrics", ""); !strings.Contains(body, "cdpguard_idle_contexts_disposed_total 1") {
		t.Errorf("metrics do not count one disposal:\n%s", grepLines(body, "cdpguard_"))
	}

	// The busy user kept working through the sweeps.
	if got, err := step(busyTab, 10*time.Second, chromedp.Evaluate[string](`document.getElementById("marker").textContent`)); err != nil || got != "allowed-page-marker" {
		t.Errorf("connected user's tab after the idle period: %q, %v", got, err)
	}
	if !containsUser(targetURLs(t, busy), "busy-user") {
		t.Error("connected user's tab gone after the idle period")
	}

	// A new connection works and gets a fresh context.
	again, _ := connectUser(t, g.URL(), user)
	if urls := targetURLs(t, again); containsUser(urls, user) || containsUser(urls, user+"-kept") {
		t.Errorf("fresh context shows the old tabs: %q", urls)
	}
	tab2 := newTab(t, again)
	if _, err := step(tab2, 15*time.Second, chromedp.Navigate(userURL(h, user+"-again"))); err != nil {
		t.Fatalf("navigate after disposal: %v", err)
	}
	if got, err := step(tab2, 10*time.Second, chromedp.Evaluate[string](`"" + localStorage.getItem("who")`)); err != nil || got != "null" {
		t.Errorf("localStorage in the fresh context: %q, %v (want null)", got, err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
