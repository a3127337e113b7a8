package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// userHeader is the guard's default session header.
const userHeader = "X-LibreChat-User"

// userGuard launches a guard with guardConfig changed by mutate. Isolation
// is the guard's own feature, so these tests skip in direct mode.
func userGuard(t *testing.T, mutate func(*cdpguard.Config)) *cdpguard.Guard {
	t.Helper()
	if directMode() {
		t.Skip("per-user isolation is the guard's; nothing to check against a plain Chromium")
	}
	cfg := guardConfig(t)
	if mutate != nil {
		mutate(&cfg)
	}
	return cdptest.StartGuard(t, cfg)
}

// userURL is the allowed page with a query naming its user, so that a URL
// in any listing tells whose page it is.
func userURL(h *testhosts.Hosts, who string) string {
	return h.PageURL("/page.html") + "?user=" + url.QueryEscape(who)
}

// runNodeSteps runs node clients/<script> args... with the common client
// environment plus extra, kills its whole process group when it ends, and
// reports each step of its result line as a subtest. want lists the steps
// that must have run.
func runNodeSteps(t *testing.T, endpoint string, h *testhosts.Hosts, extra []string, want []string, script string, args ...string) {
	t.Helper()
	node := needNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"clients/" + script}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Kill the group (node and whatever it started) on timeout and after.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(),
		"CDPGUARD_URL="+endpoint,
		"ALLOWED_URL="+h.PageURL("/page.html"),
		"POPUP_URL="+h.PageURL("/popup.html"),
		"FORBIDDEN_URL="+h.Forbidden.Origin()+testhosts.HitPath(strings.TrimSuffix(script, ".mjs")),
		"EXPECT_TEXT="+strings.Join(expectedExplanation(), ","),
		"STEP_TIMEOUT_MS="+strconv.Itoa(20000),
	)
	cmd.Env = append(cmd.Env, extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	if cmd.Process != nil {
		// The group may outlive node (MCP servers it spawned): end it.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	t.Logf("node %s %s: %v in %v", script, strings.Join(args, " "), runErr, time.Since(start).Round(time.Millisecond))
	res, err := lastJSONLine(stdout.String())
	if err != nil {
		t.Fatalf("node %s: %v (exit: %v)\nstdout:\n%s\nstderr:\n%s", script, err, runErr, stdout.String(), stderr.String())
	}
	checkSteps(t, script, res, want, runErr, stderr.String())
}

// TestIsolation checks that two users of one guard never see each other,
// with Playwright, Puppeteer, chromedp and the /json HTTP surface.
func TestIsolation(t *testing.T) {
	parallelSuite(t) // own browser and test hosts: runs beside the other heavy suites, to keep CI under 10 minutes
	needBrowser(t)
	h := testhosts.Start(t)
	g := userGuard(t, nil)
	t.Run("playwright", func(t *testing.T) {
		runNodeSteps(t, g.URL(), h, []string{"USER_A=pw-alice", "USER_B=pw-bob"},
			[]string{"connect", "defaultContext", "userAStorage", "userBStorage", "pagesHidden", "cookiesHidden",
				"getTargetsFiltered", "crossAttachRefused", "crossCloseRefused", "concurrentPages", "tracingNoLeak", "newContextOwned",
				"crossContextRefused", "closeLeavesOther", "reconnectSeesOwn", "close"},
			"isolation.mjs", "playwright")
	})
	t.Run("puppeteer", func(t *testing.T) {
		runNodeSteps(t, g.URL(), h, []string{"USER_A=pp-alice", "USER_B=pp-bob"},
			[]string{"connect", "userAStorage", "userBStorage", "pagesHidden", "crossAttachRefused",
				"closeLeavesOther", "reconnectSeesOwn", "close"},
			"isolation.mjs", "puppeteer")
	})
	t.Run("chromedp", func(t *testing.T) { chromedpIsolation(t, g.URL(), h) })
	if n := h.Forbidden.Total(); n > 0 {
		t.Errorf("forbidden host was reached %d times: %v", n, h.Forbidden.Log())
	}
}

// connectUser is connect with the user header on the WebSocket handshake.
func connectUser(t *testing.T, endpoint, user string) (context.Context, context.CancelFunc) {
	t.Helper()
	base, cancelBase := context.WithTimeout(context.Background(), 5*time.Minute)
	allocCtx, cancelAlloc := remote.NewAllocator(base, endpoint,
		remote.WithDialHTTPHeader(http.Header{userHeader: {user}}))
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	cancel := func() {
		cancelBrowser()
		cancelAlloc()
		cancelBase()
	}
	t.Cleanup(cancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("chromedp connect to %s as %q: %v", endpoint, user, err)
	}
	return bctx, cancel
}

// targetURLs lists the URLs of the page targets the browser of ctx sees.
func targetURLs(t *testing.T, ctx context.Context) []string {
	t.Helper()
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	infos, err := chromedp.Targets(lctx)
	if err != nil {
		t.Fatalf("chromedp.Targets: %v", err)
	}
	var out []string
	for _, in := range infos {
		if in.Type == "page" {
			out = append(out, in.URL)
		}
	}
	return out
}

func containsUser(urls []string, who string) bool {
	for _, u := range urls {
		if strings.Contains(u, "user="+url.QueryEscape(who)) {
			return true
		}
	}
	return false
}

func chromedpIsolation(t *testing.T, endpoint string, h *testhosts.Hosts) {
	alice, _ := connectUser(t, endpoint, "cdp-alice")
	bob, _ := connectUser(t, endpoint, "cdp-bob")
	tabA := newTab(t, alice)
	tabB := newTab(t, bob)
	if _, err := step(tabA, 15*time.Second, chromedp.Navigate(userURL(h, "cdp-alice"))); err != nil {
		t.Fatalf("alice navigate: %v", err)
	}
	if _, err := step(tabB, 15*time.Second, chromedp.Navigate(userURL(h, "cdp-bob"))); err != nil {
		t.Fatalf("bob navigate: %v", err)
	}
	aliceID := chromedp.FromContext(tabA).Target.TargetID

	t.Run("storage", func(t *testing.T) {
		if _, err := step(tabA, 10*time.Second, chromedp.Evaluate[string](`localStorage.setItem("who","cdp-alice"), document.cookie="who=cdp-alice; path=/", "ok"`)); err != nil {
			t.Fatal(err)
		}
		got, err := step(tabB, 10*time.Second, chromedp.Evaluate[string](`"" + localStorage.getItem("who") + "|" + document.cookie`))
		if err != nil {
			t.Fatal(err)
		}
		if got != "null|" {
			t.Errorf("bob's page on the same origin sees %q, want nothing of alice's", got)
		}
	})
	t.Run("targets", func(t *testing.T) {
		a, b := targetURLs(t, alice), targetURLs(t, bob)
		if !containsUser(a, "cdp-alice") || containsUser(a, "cdp-bob") {
			t.Errorf("alice's targets: %q", a)
		}
		if !containsUser(b, "cdp-bob") || containsUser(b, "cdp-alice") {
			t.Errorf("bob's targets: %q", b)
		}
	})
	t.Run("crossAttachRefused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(bob, 10*time.Second)
		defer cancel()
		_, err := chromedp.CallBrowser(ctx, target.AttachToTarget, target.AttachToTargetParams{TargetID: aliceID, Flatten: new(true)})
		if err == nil || !strings.Contains(err.Error(), "cdpguard") {
			t.Errorf("bob attaching to alice's tab: %v, want the guard's refusal", err)
		}
		_, err = chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: aliceID})
		if err == nil || !strings.Contains(err.Error(), "cdpguard") {
			t.Errorf("bob closing alice's tab: %v, want the guard's refusal", err)
		}
		if got, err := step(tabA, 10*time.Second, chromedp.Evaluate[string](`document.getElementById("marker").textContent`)); err != nil || got != "allowed-page-marker" {
			t.Errorf("alice's tab after bob's attempts: %q, %v", got, err)
		}
	})
	t.Run("pageEndpointRefused", func(t *testing.T) {
		// /devtools/page/<alice's tab> with bob's header.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ws := "ws" + strings.TrimPrefix(endpoint, "http") + "/devtools/page/" + string(aliceID)
		c, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{userHeader: {"cdp-bob"}}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.CloseNow()
		_, _, err = c.Read(ctx)
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Errorf("bob on alice's page endpoint: %v, want a policy-violation close", err)
		}
	})
	t.Run("jsonList", func(t *testing.T) { jsonListIsolation(t, endpoint, h) })
}

// getList fetches /json/list with the user header (none when user is "").
func getList(t *testing.T, endpoint, user string) (int, []string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/json/list", nil)
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /json/list: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil, string(b)
	}
	var list []struct {
		ID, URL, Type        string
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("/json/list: %v: %s", err, b)
	}
	var urls []string
	for _, e := range list {
		urls = append(urls, e.URL)
		if !strings.HasPrefix(e.WebSocketDebuggerURL, "ws"+strings.TrimPrefix(endpoint, "http")+"/devtools/page/") {
			t.Errorf("/json/list entry points elsewhere: %q", e.WebSocketDebuggerURL)
		}
	}
	return resp.StatusCode, urls, string(b)
}

// httpDo sends method to endpoint+path with the user header.
func httpDo(t *testing.T, method, u, user string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, u, nil)
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

func jsonListIsolation(t *testing.T, endpoint string, h *testhosts.Hosts) {
	_, a, _ := getList(t, endpoint, "cdp-alice")
	_, b, _ := getList(t, endpoint, "cdp-bob")
	_, none, _ := getList(t, endpoint, "")
	if !containsUser(a, "cdp-alice") || containsUser(a, "cdp-bob") {
		t.Errorf("/json/list for alice: %q", a)
	}
	if !containsUser(b, "cdp-bob") || containsUser(b, "cdp-alice") {
		t.Errorf("/json/list for bob: %q", b)
	}
	if containsUser(none, "cdp-alice") || containsUser(none, "cdp-bob") {
		t.Errorf("/json/list without the header shows users' tabs: %q", none)
	}
	// /json/new lands in the caller's context; /json/close is the owner's.
	code, body := httpDo(t, http.MethodPut, endpoint+"/json/new?"+userURL(h, "cdp-alice-new"), "cdp-alice")
	if code != http.StatusOK {
		t.Fatalf("/json/new as alice: %d %s", code, body)
	}
	var created struct{ ID string }
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.ID == "" {
		t.Fatalf("/json/new reply %q: %v", body, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, a, _ = getList(t, endpoint, "cdp-alice")
		if containsUser(a, "cdp-alice-new") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !containsUser(a, "cdp-alice-new") {
		t.Errorf("alice's /json/new tab not in her list: %q", a)
	}
	if _, b, _ = getList(t, endpoint, "cdp-bob"); containsUser(b, "cdp-alice-new") {
		t.Errorf("bob's list shows alice's /json/new tab: %q", b)
	}
	if code, body := httpDo(t, http.MethodPut, endpoint+"/json/close/"+created.ID, "cdp-bob"); code != http.StatusNotFound {
		t.Errorf("bob closing alice's tab over HTTP: %d %s, want 404", code, body)
	}
	if code, body := httpDo(t, http.MethodPut, endpoint+"/json/close/"+created.ID, "cdp-alice"); code != http.StatusOK {
		t.Errorf("alice closing her tab over HTTP: %d %s", code, body)
	}
}
