package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// policyBox is one loopback listener the browser reaches under several
// *.test names (the host map sends them all to 127.0.0.1). It counts
// requests per name, so a name the policy refuses must show zero hits;
// /page sets a cookie and echoes the cookies it got; /ws is a WebSocket
// echo that stays open until the peer goes.
type policyBox struct {
	port int
	mu   sync.Mutex
	hits map[string]int
}

func startPolicyBox(t *testing.T) *policyBox {
	t.Helper()
	b := &policyBox{hits: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		b.count(r)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Set-Cookie", "kept=yes; Path=/; Max-Age=3600")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><title>box</title><p>box page on %s</p><p>cookies: [%s]</p>", hostOnly(r.Host), r.Header.Get("Cookie"))
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		b.count(r)
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, msg); err != nil {
				return
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.port = ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close() // hijacked WebSockets
		<-done
	})
	return b
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

func (b *policyBox) count(r *http.Request) {
	b.mu.Lock()
	b.hits[hostOnly(r.Host)]++
	b.mu.Unlock()
}

func (b *policyBox) Hits(name string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hits[name]
}

func (b *policyBox) url(name, path string) string {
	return "http://" + name + ":" + strconv.Itoa(b.port) + path
}

// driver is clients/policyreload.mjs: a Playwright and an MCP client kept
// connected across commands.
type driver struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
	id  int
}

func startDriver(t *testing.T, endpoint string) *driver {
	t.Helper()
	node := needNode(t)
	cmd := exec.Command(node, "clients/policyreload.mjs")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "CDPGUARD_URL="+endpoint, "STEP_TIMEOUT_MS=15000")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr tailBuffer
	stderr.max = 16 << 10
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		_, _ = io.WriteString(in, `{"op":"exit"}`+"\n")
		_ = in.Close()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-waited
		}
		if t.Failed() {
			t.Logf("driver stderr:\n%s", stderr.String())
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &driver{t: t, in: in, out: sc}
}

// do sends one command and returns its answer; a failed command fails t.
func (d *driver) do(op string, args map[string]any) map[string]any {
	d.t.Helper()
	d.id++
	args["id"], args["op"] = d.id, op
	b, _ := json.Marshal(args)
	if _, err := d.in.Write(append(b, '\n')); err != nil {
		d.t.Fatalf("%s: %v", op, err)
	}
	line := make(chan string, 1)
	go func() {
		if d.out.Scan() {
			line <- d.out.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			d.t.Fatalf("%s: the driver exited", op)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(l), &res); err != nil {
			d.t.Fatalf("%s: %q: %v", op, l, err)
		}
		if res["ok"] != true {
			d.t.Fatalf("%s %s: %v", op, b, res["error"])
		}
		return res
	case <-time.After(30 * time.Second):
		d.t.Fatalf("%s: no answer in 30 s", op)
	}
	return nil
}

func (d *driver) str(res map[string]any, k string) string { s, _ := res[k].(string); return s }

// writePolicyFile replaces the policy file the way an editor or a
// ConfigMap update does: a new file renamed over the old path.
func writePolicyFile(t *testing.T, path, content string) time.Time {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return at
}

// waitPolicy polls /policy (for user, in group) until it contains want
// and lacks gone, and returns when it did; the guard's decisions read the
// same snapshot as /policy.
func waitPolicy(t *testing.T, base, user, group string, want, gone string) time.Time {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, base+"/policy", nil)
		req.Header.Set(userHeader, user)
		if group != "" {
			req.Header.Set("X-Cdpguard-Group", group)
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			s := string(b)
			if (want == "" || strings.Contains(s, want)) && (gone == "" || !strings.Contains(s, gone)) {
				return time.Now()
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/policy did not show %q without %q within 10 s", want, gone)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var reloadErrors = regexp.MustCompile(`(?m)^cdpguard_policy_reloads_total\{result="error"\} ([0-9.e+]+)$`)

func policyErrors(t *testing.T, base string) float64 {
	t.Helper()
	m := reloadErrors.FindStringSubmatch(httpBody(t, base+"/metrics", ""))
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// policyV0 is the starting policy. Its last group, filler, holds 10,000
// entries no user reaches, so every reload's diff is large: before issue
// 32 the diff was quadratic and ran before open tunnels were rechecked,
// and a WebSocket to a removed host kept working for seconds.
var policyV0 = `# e2e: the starting policy
allow: [home.test, gone.test]
instructions: e2e-policy-file ask the operator
groupHeader: X-Cdpguard-Group
groups:
  staff:
    allow: [home.test, staff.test]
    instructions: e2e staff instructions
  filler:
    allow: [` + fillerEntries(10000) + `]
`

// fillerEntries returns n entries under a name no one resolves.
func fillerEntries(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "f%d.x", i)
	}
	return b.String()
}

// TestPolicyFileReload changes the policy file three times under one guard
// while a Playwright user and an MCP user stay connected: an added host is
// reachable at once, a removed host is refused at once and its open
// WebSocket closed, a bad file changes nothing (and is counted); the users
// keep their tabs and cookies throughout, MCP sessions are told
// (tools/list_changed) and see the new list; the reload that removes a
// host closes its WebSocket itself (its log line counts the tunnel),
// though the file is large. Then two groups are each
// refused what the other may reach, and a user cannot change group while
// their context lives.
func TestPolicyFileReload(t *testing.T) {
	parallelSuite(t) // own guard, browser and hosts: runs beside the other suites
	needBrowser(t)
	box := startPolicyBox(t)
	path := filepath.Join(t.TempDir(), "policy.yaml")
	writePolicyFile(t, path, policyV0)
	cfg := guardConfig(t)
	cfg.Allow, cfg.Instructions = nil, ""
	cfg.PolicyFile = path
	cfg.PolicyPoll = 100 * time.Millisecond
	guardLog := &tailBuffer{max: 1 << 20}
	var logTo io.Writer = guardLog
	if os.Getenv("CDPGUARD_E2E_LOG") == "1" {
		logTo = io.MultiWriter(guardLog, os.Stderr)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(logTo, nil))
	g := cdptest.StartGuard(t, cfg)
	base := g.URL()
	d := startDriver(t, base)
	pwUser := map[string]string{userHeader: "reload-pw"}
	mcpUser := map[string]string{userHeader: "reload-mcp"}

	d.do("pw.open", map[string]any{"who": "pw", "headers": pwUser})
	init := d.do("mcp.open", map[string]any{"who": "mcp", "headers": mcpUser})
	if s := d.str(init, "instructions"); !strings.Contains(s, "home.test") || !strings.Contains(s, "e2e-policy-file") {
		t.Fatalf("MCP instructions do not carry the file's policy: %q", s)
	}
	goto_ := func(who, url string) map[string]any { return d.do("pw.goto", map[string]any{"who": who, "url": url}) }
	navMCP := func(url string) map[string]any {
		return d.do("mcp.call", map[string]any{"who": "mcp", "tool": "browser_navigate", "args": map[string]any{"url": url}})
	}
	readMCP := func(url string) map[string]any {
		return d.do("mcp.call", map[string]any{"who": "mcp", "tool": "browser_read", "args": map[string]any{"url": url}})
	}
	// keeps checks that both users still have their tab and their cookie.
	keeps := func(when string) {
		t.Helper()
		r := goto_("pw", box.url("home.test", "/page"))
		if body := d.str(r, "body"); !strings.Contains(body, "kept=yes") {
			t.Errorf("%s: the Playwright user's cookie is gone: %q", when, body)
		}
		if r := readMCP(box.url("home.test", "/page")); r["isError"] == true || !strings.Contains(d.str(r, "text"), "kept=yes") {
			t.Errorf("%s: the MCP user's cookie is gone: %v", when, r)
		}
	}

	// Before: home.test and gone.test are reachable, added.test is not.
	goto_("pw", box.url("home.test", "/page"))
	readMCP(box.url("home.test", "/page"))
	d.do("pw.tab", map[string]any{"who": "pw", "url": box.url("home.test", "/page")})
	if r := d.do("pw.ws", map[string]any{"who": "pw", "url": "ws://gone.test:" + strconv.Itoa(box.port) + "/ws"}); r["open"] != true {
		t.Fatalf("WebSocket to gone.test did not open: %v", r)
	}
	if r := d.do("pw.wsEcho", map[string]any{"who": "pw", "msg": "before"}); r["echoed"] != true {
		t.Fatalf("WebSocket to gone.test does not echo: %v", r)
	}
	if r := goto_("pw", box.url("added.test", "/page")); !strings.Contains(d.str(r, "body"), "added.test") || strings.Contains(d.str(r, "body"), "box page") {
		t.Fatalf("added.test reachable before it was added: %v", r)
	}
	if r := navMCP(box.url("added.test", "/page")); r["isError"] != true {
		t.Fatalf("MCP reached added.test before it was added: %v", r)
	}
	if n := box.Hits("added.test"); n != 0 {
		t.Fatalf("added.test saw %d requests before it was added", n)
	}
	keeps("before any reload")

	var latencies []time.Duration
	t.Run("add-host", func(t *testing.T) {
		wrote := writePolicyFile(t, path, strings.Replace(policyV0, "allow: [home.test, gone.test]", "allow: [home.test, gone.test, added.test]", 1))
		latencies = append(latencies, waitPolicy(t, base, "reload-pw", "", `"added.test"`, "").Sub(wrote))
		if r := goto_("pw", box.url("added.test", "/page")); !strings.Contains(d.str(r, "body"), "box page on added.test") {
			t.Errorf("added.test not reachable after it was added: %v", r)
		}
		d.do("mcp.changed", map[string]any{"who": "mcp", "n": 1})
		tools := d.do("mcp.tools", map[string]any{"who": "mcp"})
		if b, _ := json.Marshal(tools["tools"]); !strings.Contains(string(b), "added.test") {
			t.Errorf("tool descriptions do not carry the new allowlist: %s", b)
		}
		if r := navMCP(box.url("added.test", "/page")); r["isError"] == true {
			t.Errorf("MCP cannot reach added.test after it was added: %v", r)
		}
		if r := d.do("pw.wsEcho", map[string]any{"who": "pw", "msg": "kept"}); r["echoed"] != true {
			t.Errorf("the WebSocket to a host still allowed was disturbed: %v", r)
		}
		keeps("after adding a host")
	})

	t.Run("remove-host", func(t *testing.T) {
		goneBefore := box.Hits("gone.test")
		wrote := writePolicyFile(t, path, strings.Replace(policyV0, "allow: [home.test, gone.test]", "allow: [home.test, added.test]", 1))
		latencies = append(latencies, waitPolicy(t, base, "reload-pw", "", `"added.test"`, `"gone.test"`).Sub(wrote))
		if r := d.do("pw.wsClosed", map[string]any{"who": "pw"}); r["code"] == nil {
			t.Errorf("the open WebSocket to the removed host was not closed: %v", r)
		}
		// The reload itself closed it, right after the swap: its log line,
		// written once the diff is done, counts the tunnel.
		removed := regexp.MustCompile(`policy reloaded: default: -allow gone.test[^\n]*tunnelsClosed=([0-9]+)`)
		var closed []string
		for deadline := time.Now().Add(10 * time.Second); closed == nil; time.Sleep(10 * time.Millisecond) {
			if closed = removed.FindStringSubmatch(guardLog.String()); closed == nil && time.Now().After(deadline) {
				log := guardLog.String()
				t.Fatalf("no log line of the reload that removed gone.test within 10 s; the log ends:\n%s", log[max(0, len(log)-4096):])
			}
		}
		if closed[1] == "0" {
			t.Errorf("the reload that removed gone.test closed no tunnel: %s", closed[0])
		}
		if r := goto_("pw", box.url("gone.test", "/page")); strings.Contains(d.str(r, "body"), "box page") || !strings.Contains(d.str(r, "body"), "added.test") {
			t.Errorf("gone.test still reachable, or the explanation page does not list the new origins: %v", r)
		}
		if r := d.do("pw.ws", map[string]any{"who": "pw", "url": "ws://gone.test:" + strconv.Itoa(box.port) + "/ws"}); r["open"] == true {
			t.Errorf("a new WebSocket to the removed host opened")
		}
		r := navMCP(box.url("gone.test", "/page"))
		if txt := d.str(r, "text"); r["isError"] != true || !strings.Contains(txt, "added.test") || strings.Contains(txt, "gone.test,") {
			t.Errorf("MCP: the blocked-URL error must list the new reachable origins: %v", r)
		}
		if n := box.Hits("gone.test") - goneBefore; n != 0 {
			t.Errorf("gone.test saw %d requests after it was removed", n)
		}
		d.do("mcp.changed", map[string]any{"who": "mcp", "n": 2})
		keeps("after removing a host")
	})

	t.Run("bad-file", func(t *testing.T) {
		before := policyErrors(t, base)
		writePolicyFile(t, path, "allow: [home.test, added.test, gone.test]\nalow: [typo.test]\n")
		deadline := time.Now().Add(10 * time.Second)
		for policyErrors(t, base) < before+1 {
			if time.Now().After(deadline) {
				t.Fatal("the bad file was not counted in cdpguard_policy_reloads_total{result=\"error\"}")
			}
			time.Sleep(20 * time.Millisecond)
		}
		waitPolicy(t, base, "reload-pw", "", `"added.test"`, `"gone.test"`) // unchanged
		if r := goto_("pw", box.url("gone.test", "/page")); strings.Contains(d.str(r, "body"), "box page") {
			t.Errorf("a bad file changed the policy: %v", r)
		}
		keeps("after a bad file")
	})

	t.Run("groups", func(t *testing.T) {
		writePolicyFile(t, path, strings.Replace(policyV0, "allow: [home.test, gone.test]", "allow: [home.test, added.test]", 1))
		waitPolicy(t, base, "reload-staff", "staff", `"staff.test"`, "")
		d.do("pw.open", map[string]any{"who": "staff", "headers": map[string]string{userHeader: "reload-staff", "X-Cdpguard-Group": "staff"}})
		staffBefore := box.Hits("staff.test")
		if r := goto_("pw", box.url("staff.test", "/page")); strings.Contains(d.str(r, "body"), "box page") {
			t.Errorf("a default-group user reached staff.test: %v", r)
		}
		if n := box.Hits("staff.test") - staffBefore; n != 0 {
			t.Errorf("staff.test saw %d requests from a default-group user", n)
		}
		addedBefore := box.Hits("added.test")
		r := goto_("staff", box.url("added.test", "/page"))
		if body := d.str(r, "body"); strings.Contains(body, "box page") || !strings.Contains(body, "staff.test") || !strings.Contains(body, "e2e staff instructions") {
			t.Errorf("a staff user reached added.test, or the explanation page is not staff's: %v", r)
		}
		if n := box.Hits("added.test") - addedBefore; n != 0 {
			t.Errorf("added.test saw %d requests from a staff user", n)
		}
		if r := goto_("staff", box.url("staff.test", "/page")); !strings.Contains(d.str(r, "body"), "box page on staff.test") {
			t.Errorf("a staff user cannot reach staff.test: %v", r)
		}
		// The staff user's context is not the default user's: no cookie.
		if r := goto_("staff", box.url("home.test", "/page")); !strings.Contains(d.str(r, "body"), "cookies: []") {
			t.Errorf("the staff user sees another group's cookie: %v", r)
		}
		// A user's group is fixed while their context lives.
		status, body := httpDoHeaders(t, base+"/json/list", map[string]string{userHeader: "reload-pw", "X-Cdpguard-Group": "staff"})
		if status != http.StatusForbidden || !strings.Contains(body, "fixed for the life") {
			t.Errorf("a group change mid-life: %d %q", status, body)
		}
	})
	t.Logf("policy file write → enforcement: %v (poll 100 ms)", latencies)
}

func httpDoHeaders(t *testing.T, u string, h map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}
