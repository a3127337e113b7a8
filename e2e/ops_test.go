// Operations (issues 11 and 14): the README's run command under a process
// manager's signals, a crashed tab, a killed browser, a clean SIGTERM.

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestServeLifecycle runs the README's command (`bash scripts/serve.sh
// ...`) and, while a Playwright session keeps a page polling a forbidden
// host and an allowed sink:
//   - crashes one tab's renderer (Page.crash from its own agent): that tab
//     is closed, the guard keeps serving;
//   - SIGKILLs the managed Chromium: agents are closed with a reason,
//     /readyz answers 503 and then ok, a new connection gets a fresh
//     context and works; the same for an MCP session (its next call fails,
//     a new session of the user starts afresh);
//   - SIGTERMs the script's process only (not its group, as a process
//     manager or `docker stop` would): agents are closed with a reason, the
//     process exits 0 within 10 s, no Chromium process of it is left and
//     the port is free.
//
// Throughout, the forbidden listener must see nothing, while the sink (the
// control) is reached in both browser lifetimes. The server logs JSON: the
// canonical "blocked" line is checked key by key.
func TestServeLifecycle(t *testing.T) {
	parallelSuite(t) // own cdpguard process, browser and test hosts
	if directMode() {
		t.Skip("cdpguard's own lifecycle: no direct-mode counterpart")
	}
	chrome := needBrowser(t)
	node := needNode(t)
	h := testhosts.Start(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{filepath.Join(root, "scripts", "serve.sh")}, serveArgs(chrome)[1:]...)
	args = append(args, "--log-format", "json")
	cmd := exec.Command("bash", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CDPGUARD_BIN_DIR="+t.TempDir()) // not XDG_CACHE_HOME: Go keeps its build cache there
	srv := startServed(t, cmd)
	var base string
	select { // the script builds the binary first: allow a cold build cache
	case base = <-srv.url:
	case <-srv.waited:
		t.Fatalf("serve.sh exited before listening:\n%s", srv.out)
	case <-time.After(2 * time.Minute):
		t.Fatalf("no `listening on` line within 2 min:\n%s", srv.out)
	}
	cdptest.WaitHTTP(t, base+"/readyz", "ok", 30*time.Second)
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"); err != nil || filepath.Base(exe) != "cdpguard" {
		t.Errorf("serve.sh did not exec cdpguard: pid %d runs %q (%v): signals would not reach cdpguard", cmd.Process.Pid, exe, err)
	}

	// The Playwright session, polling throughout.
	pw := exec.Command(node, "clients/lifecycle.mjs")
	pw.Env = append(os.Environ(),
		"CDPGUARD_URL="+base,
		"ALLOWED_URL="+h.PageURL("/page.html"),
		"POLL_FORBIDDEN="+h.Forbidden.Origin()+testhosts.HitPath("lifecycle"),
		"POLL_SINK="+h.Sink.Origin()+testhosts.HitPath("lifecycle"),
		"USER_KEY=pw-user",
	)
	pwOut, err := pw.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pwErr := &tailBuffer{max: 16 << 10}
	pw.Stderr = pwErr
	if err := pw.Start(); err != nil {
		t.Fatal(err)
	}
	pwDone := make(chan error, 1)
	events := make(chan map[string]any, 16)
	go func() { // ends when node's stdout closes
		sc := bufio.NewScanner(pwOut)
		for sc.Scan() {
			var e map[string]any
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		close(events)
	}()
	go func() { pwDone <- pw.Wait() }()
	t.Cleanup(func() { _ = pw.Process.Kill() })
	expect := func(event string, round float64, d time.Duration) map[string]any {
		t.Helper()
		timer := time.NewTimer(d)
		defer timer.Stop()
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("playwright ended before %q (round %v); stderr:\n%s\nserver:\n%s", event, round, pwErr, srv.out)
				}
				if e["event"] == "error" {
					t.Fatalf("playwright: %v\nserver:\n%s", e["error"], srv.out)
				}
				if e["event"] == event && e["round"] == round {
					return e
				}
			case <-timer.C:
				t.Fatalf("no playwright %q (round %v) within %v; stderr:\n%s\nserver:\n%s", event, round, d, pwErr, srv.out)
			}
		}
	}
	expect("polling", 1, 30*time.Second)
	waitSinkHits(t, h, 3)

	// A renderer crash closes that tab only.
	crasher := cdptest.DialUser(t, browserWS(t, base), "crash-user", cdptest.Options{})
	session := rawPage(t, crasher)
	if ids := pages(t, base, "crash-user"); len(ids) != 1 {
		t.Fatalf("crash-user has pages %v, want one", ids)
	}
	b, _ := json.Marshal(map[string]any{"id": 1, "sessionId": session, "method": "Page.crash"})
	if err := crasher.WriteFrame(websocket.MessageText, b); err != nil {
		t.Fatalf("send Page.crash: %v", err)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if ids := pages(t, base, "crash-user"); len(ids) == 0 {
			break
		} else if time.Now().After(end) {
			t.Fatalf("crashed tab %v still listed after 10s\nserver:\n%s", ids, srv.out)
		}
	}
	waitMetric(t, base, "cdpguard_renderer_crashes_total", 1)
	cdptest.WaitHTTP(t, base+"/readyz", "ok", time.Second)
	sinkBefore := h.Sink.Hits(testhosts.HitPath("lifecycle"))
	waitSinkHits(t, h, sinkBefore+3) // the Playwright tab kept running

	// SIGKILL the browser: agents closed with a reason, 503, then ok.
	watcher := cdptest.DialUser(t, browserWS(t, base), "watcher", cdptest.Options{})
	if _, err := watcher.CallID(10*time.Second, 1, "", "Browser.getVersion", nil); err != nil {
		t.Fatal(err) // the agent is set up, not still connecting
	}
	// An MCP session (the Go SDK client) with a tab open in its context.
	ms := mcpConnect(t, base, "mcp-user")
	call(t, ms, "browser_navigate", map[string]any{"url": h.PageURL("/page.html")}, false)
	mustContain(t, "MCP tabs before the kill", call(t, ms, "browser_tabs", map[string]any{"action": "list"}, false), "/page.html")
	browserPid := managedBrowser(t, cmd.Process.Pid)
	firstBrowser := descendants(cmd.Process.Pid)
	if err := syscall.Kill(browserPid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL browser %d: %v", browserPid, err)
	}
	select {
	case <-watcher.Done():
		if status, reason := watcher.CloseStatus(); status != 1011 || reason == "" {
			t.Errorf("agent closed with %d %q, want 1011 and a reason", status, reason)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent not closed within 10s of the browser's death")
	}
	for end := time.Now().Add(2 * time.Second); httpStatus(t, base+"/readyz") != http.StatusServiceUnavailable; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("/readyz did not answer 503 after the browser died")
		}
	}
	expect("disconnected", 1, 10*time.Second)
	cdptest.WaitHTTP(t, base+"/readyz", "ok", 45*time.Second)
	waitMetric(t, base, "cdpguard_browser_restarts_total", 1)
	for _, p := range firstBrowser { // the dead browser's helpers went with it
		if alive(p) {
			t.Errorf("process %d of the killed browser outlived its relaunch: %.200s", p.pid, p.cmd)
		}
	}
	// The MCP session died with its browser: its next call fails with a
	// reason (a protocol error, or a tool error), and a new session of the
	// same user starts in a fresh context.
	func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := ms.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{"action": "list"}})
		switch {
		case err != nil:
			t.Logf("old MCP session after the relaunch: %v", err)
		case res.IsError:
			t.Logf("old MCP session after the relaunch: tool error %v", res.Content)
		default:
			t.Errorf("the MCP session of the dead browser still works after the relaunch: %v", res.Content)
		}
	}()
	ms2 := mcpConnect(t, base, "mcp-user")
	if got := call(t, ms2, "browser_tabs", map[string]any{"action": "list"}, false); strings.Contains(got, "/page.html") {
		t.Errorf("the MCP user's new session still sees the dead browser's tab: %s", got)
	}
	mustContain(t, "MCP read after the relaunch", call(t, ms2, "browser_read", map[string]any{"url": h.PageURL("/page.html")}, false), "/page.html")
	if e := expect("polling", 2, 45*time.Second); e["pagesBefore"] != float64(0) {
		t.Errorf("the reconnected user's context had %v pages before newPage, want a fresh one (0)", e["pagesBefore"])
	}
	sinkBefore = h.Sink.Hits(testhosts.HitPath("lifecycle"))
	waitSinkHits(t, h, sinkBefore+3)

	// SIGTERM the script's process only.
	watcher = cdptest.DialUser(t, browserWS(t, base), "watcher", cdptest.Options{})
	if _, err := watcher.CallID(10*time.Second, 1, "", "Browser.getVersion", nil); err != nil {
		t.Fatal(err)
	}
	found := append([]proc{}, descendants(cmd.Process.Pid)...)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	select {
	case <-srv.waited:
	case <-time.After(10 * time.Second):
		t.Fatalf("cdpguard still running 10s after SIGTERM\nserver:\n%s", srv.out)
	}
	t.Logf("exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	if !cmd.ProcessState.Success() {
		t.Errorf("exit after SIGTERM: %v, want 0\nserver:\n%s", cmd.ProcessState, srv.out)
	}
	select {
	case <-watcher.Done():
		if status, reason := watcher.CloseStatus(); status != 1001 || !strings.Contains(reason, "shutting down") {
			t.Errorf("agent closed with %d %q at SIGTERM, want 1001 \"cdpguard: shutting down\"", status, reason)
		}
	case <-time.After(time.Second):
		t.Error("agent still open after cdpguard exited")
	}
	expect("disconnected", 2, 5*time.Second)
	for end := time.Now().Add(10*time.Second - time.Since(start)); ; time.Sleep(50 * time.Millisecond) {
		var left []proc
		for _, p := range found {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(end) {
			for _, p := range left {
				t.Errorf("process %d left 10s after SIGTERM: %.200s", p.pid, p.cmd)
			}
			break
		}
	}
	if ln, err := net.Listen("tcp", strings.TrimPrefix(base, "http://")); err != nil {
		t.Errorf("port still taken after exit: %v", err)
	} else {
		ln.Close()
	}

	// The leak check, with its control.
	if n, c := h.Forbidden.Total(), h.Forbidden.Conns(); n != 0 || c != 0 {
		t.Errorf("forbidden listener saw %d requests and %d connections: %v", n, c, h.Forbidden.Log())
	}
	checkBlockedLine(t, srv.out.String(), "pw-user")
	select {
	case err := <-pwDone:
		if err != nil {
			t.Errorf("playwright: %v\n%s", err, pwErr)
		}
	case <-time.After(10 * time.Second):
		t.Error("playwright script still running")
	}
}

// checkBlockedLine finds a JSON "blocked" line for the polled forbidden host
// and checks its fixed keys.
func checkBlockedLine(t *testing.T, out, user string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["msg"] != "blocked" || m["host"] != testhosts.ForbiddenName {
			continue
		}
		for _, k := range []string{"url", "host", "reason", "resource_type", "user", "target", "layer"} {
			if _, ok := m[k]; !ok {
				t.Errorf("blocked line lacks %q: %s", k, line)
			}
		}
		if m["user"] != user || m["layer"] != "fetch" || m["target"] == "" || m["reason"] == "" {
			t.Errorf("blocked line: want user %q, layer fetch, a target and a reason: %s", user, line)
		}
		return
	}
	t.Errorf("no JSON line with msg=blocked and host=%s in the server log:\n%s", testhosts.ForbiddenName, out)
}

// waitSinkHits waits until the sink has seen n polls.
func waitSinkHits(t *testing.T, h *testhosts.Hosts, n int) {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); h.Sink.Hits(testhosts.HitPath("lifecycle")) < n; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("sink saw %d polls, want %d: the control page is not running", h.Sink.Hits(testhosts.HitPath("lifecycle")), n)
		}
	}
}

// managedBrowser returns the pid of the Chromium browser process below pid.
func managedBrowser(t *testing.T, pid int) int {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, p := range descendants(pid) {
			if strings.Contains(p.cmd, "--remote-debugging-pipe") && !strings.Contains(p.cmd, "--type=") {
				return p.pid
			}
		}
	}
	t.Fatalf("no browser process below %d", pid)
	return 0
}

// browserWS returns the browser WebSocket URL from /json/version.
func browserWS(t *testing.T, base string) string {
	t.Helper()
	var v struct{ WebSocketDebuggerURL string }
	if err := json.Unmarshal([]byte(httpBody(t, base+"/json/version", "")), &v); err != nil || v.WebSocketDebuggerURL == "" {
		t.Fatalf("/json/version: %v", err)
	}
	return v.WebSocketDebuggerURL
}

// pages returns the ids of the page targets /json/list shows user.
func pages(t *testing.T, base, user string) []string {
	t.Helper()
	var l []struct{ ID, Type string }
	if err := json.Unmarshal([]byte(httpBody(t, base+"/json/list", user)), &l); err != nil {
		t.Fatalf("/json/list: %v", err)
	}
	var ids []string
	for _, e := range l {
		if e.Type == "page" {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

func httpBody(t *testing.T, u, user string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if user != "" {
		req.Header.Set(userHeader, user)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b)
}

func httpStatus(t *testing.T, u string) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

var metricLine = regexp.MustCompile(`(?m)^(\w+) ([0-9.e+]+)$`)

// waitMetric waits until the unlabelled metric name reaches at least want.
func waitMetric(t *testing.T, base, name string, want float64) {
	t.Helper()
	var got float64
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if got = metricValue(t, base, name); got >= want {
			return
		}
	}
	t.Errorf("metric %s = %v, want >= %v", name, got, want)
}

// metricValue reads an unlabelled metric from /metrics (0 when absent).
func metricValue(t *testing.T, base, name string) float64 {
	t.Helper()
	for _, m := range metricLine.FindAllStringSubmatch(httpBody(t, base+"/metrics", ""), -1) {
		if m[1] == name {
			v, _ := strconv.ParseFloat(m[2], 64)
			return v
		}
	}
	return 0
}
