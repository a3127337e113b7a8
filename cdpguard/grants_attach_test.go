package cdpguard_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// startHumanChrome starts a headless Chromium as a human would for
// `cdpguard attach`: a debugging port, and its traffic sent to the guard's
// shared egress listener at proxyAddr. It returns the browser's HTTP base
// URL and kills the browser when t ends.
func startHumanChrome(t *testing.T, proxyAddr string) string {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	dir := t.TempDir()
	cmd := exec.Command(path, "--headless", "--no-first-run", "--no-sandbox",
		"--remote-debugging-port=0", "--user-data-dir="+dir,
		"--proxy-server=http://"+proxyAddr, "--proxy-bypass-list=<-loopback>",
		"about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // its process group: ours
		select {
		case <-waited:
		case <-time.After(5 * time.Second):
			t.Errorf("chromium pid %d did not exit", cmd.Process.Pid)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if port, _, ok := strings.Cut(string(b), "\n"); err == nil && ok && port != "" {
			return "http://127.0.0.1:" + port
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("chromium wrote no DevToolsActivePort in 20s")
	return ""
}

// freeLoopbackAddr returns a loopback address with a port that was free a
// moment ago, for --egress-listen.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// TestGrantsAttach: in attach mode the human's own tabs are Chrome's
// default context. With Chrome started with --proxy-server at the guard's
// fixed --egress-listen address, a grant made on a human's tab opens the
// host for the human's tabs at both layers (their WebSocket goes through
// the shared listener, judged with the default context's grants), and for
// no agent's user.
func TestGrantsAttach(t *testing.T) {
	cdpguard.NeedBrowser(t)
	page, err := os.ReadFile("testdata/grants/page.html")
	if err != nil {
		t.Fatal(err)
	}
	human := startGrantHost(t, page, nil)
	allowed := startGrantHost(t, page, nil)
	egressAddr := freeLoopbackAddr(t)
	base := startHumanChrome(t, egressAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := cdpguard.Attach(ctx, base, cdpguard.Config{
		Allow:        []string{"allowed.test"},
		HostMap:      []string{"*.test=127.0.0.1"},
		EgressListen: egressAddr,
	})
	if err != nil {
		t.Fatalf("attach: %v", err)
	}
	cdptest.CloseOnCleanup(t, g)
	if got := cdpguard.SharedProxyAddr(g); got != egressAddr {
		t.Fatalf("shared egress listener on %s, want %s", got, egressAddr)
	}

	// The human's own connection to their browser, and their first tab.
	ws, err := cdptest.BrowserURL(ctx, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cdptest.Dial(ctx, ws, cdptest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tab, err := cdpguard.DefaultContextPage(ctx, g)
	if err != nil || tab == "" {
		t.Fatalf("the human's tab: %q %v", tab, err)
	}
	h := &grantAgent{t: t, c: c, target: tab}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	h.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": tab, "flatten": true}, &attached)
	h.session = attached.SessionID
	h.call(ctx, h.session, "Page.enable", nil, nil)

	hostURL := "http://human.test:" + strconv.Itoa(human.port)
	if title := h.navigate(ctx, hostURL+"/"); !strings.HasPrefix(title, "Blocked by cdpguard") {
		t.Fatalf("before the grant the human's tab shows %q", title)
	}
	// The human's WebSockets go through the shared listener (Fetch never
	// sees them): refused before the grant.
	if title := h.navigate(ctx, "http://allowed.test:"+strconv.Itoa(allowed.port)+"/"); title != "grants test page" {
		t.Fatalf("the human's allowed page: %q", title)
	}
	if got := h.eval(ctx, `wsEcho("ws://human.test:`+strconv.Itoa(human.port)+`/ws")`); strings.HasPrefix(got, "echo") || human.hits() != 0 {
		t.Fatalf("before the grant the human's WebSocket got %q (%d hits): the human's Chrome does not use the egress listener", got, human.hits())
	}
	if code := proxyGet(t, egressAddr, hostURL+"/proxied"); code != http.StatusForbidden {
		t.Fatalf("the shared listener before the grant: %d", code)
	}
	key, err := cdpguard.GrantHost(g, tab, "human.test", "test")
	if err != nil || key != "(default context)" {
		t.Fatalf("grant on the human's tab: %q %v", key, err)
	}
	if title := h.navigate(ctx, hostURL+"/"); title != "grants test page" {
		t.Fatalf("after the grant the human's tab shows %q", title)
	}
	if got := h.eval(ctx, `wsEcho("ws://human.test:`+strconv.Itoa(human.port)+`/ws")`); got != "echo:ping" || human.pathHits("/ws") != 1 {
		t.Errorf("the human's WebSocket through the shared listener: %q", got)
	}

	// An agent's user does not get the human's grant.
	dave := newGrantAgent(ctx, t, g, "dave")
	if title := dave.navigate(ctx, hostURL+"/dave"); !strings.HasPrefix(title, "Blocked by cdpguard") {
		t.Errorf("dave reached the human's granted host: %q", title)
	}
	if n := human.pathHits("/dave"); n != 0 {
		t.Errorf("human.test saw %d requests from dave", n)
	}
	if code := proxyGet(t, cdpguard.UserProxyAddr(g, "dave"), hostURL+"/dave"); code != http.StatusForbidden || human.pathHits("/dave") != 0 {
		t.Errorf("dave's listener let the human's grant through: %d", code)
	}
	if got := httpPolicy(t, g, "dave").hosts(); got != "" {
		t.Errorf("/policy for dave shows %q", got)
	}
}
