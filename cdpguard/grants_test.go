package cdpguard_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// lockedBuffer collects the guard's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestGrants: a grant made for user alice opens the host for alice's tabs,
// at the Fetch layer and at the egress proxy (her WebSocket connects), and
// for nobody else: bob is refused at both layers and bob's listener for
// the host sees nothing, bob cannot reach alice's proxy listener, no agent
// command makes a grant, /policy and Guard.getPolicy show it only to
// alice, and it ends when her session is disposed.
func TestGrants(t *testing.T) {
	cdpguard.NeedBrowser(t)
	page, err := os.ReadFile("testdata/grants/page.html")
	if err != nil {
		t.Fatal(err)
	}
	worker, err := os.ReadFile("testdata/grants/worker.js")
	if err != nil {
		t.Fatal(err)
	}
	allowed := startGrantHost(t, page, worker)
	forAlice := startGrantHost(t, page, worker) // granted.test: the port alice uses
	forBob := startGrantHost(t, page, worker)   // granted.test: the port bob tries
	forDefault := startGrantHost(t, page, worker)
	logs := &lockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := cdptest.StartGuard(t, cdpguard.Config{
		// 127.0.0.1 is allowed so that only the proxy's own-address rule
		// stands between bob and alice's proxy listener.
		Allow:   []string{"allowed.test;127.0.0.1"},
		Block:   []string{"blocked.test"},
		HostMap: []string{"*.test=127.0.0.1"},
		Logger:  slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	origin := func(host string, h *grantHost) string { return "http://" + host + ":" + strconv.Itoa(h.port) }
	alice := newGrantAgent(ctx, t, g, "alice")
	bob := newGrantAgent(ctx, t, g, "bob")

	// Before the grant alice gets the explanation page.
	if title := alice.navigate(ctx, origin("granted.test", forAlice)+"/"); !strings.HasPrefix(title, "Blocked by cdpguard") {
		t.Fatalf("before the grant: title %q", title)
	}
	if n := forAlice.hits(); n != 0 {
		t.Fatalf("before the grant granted.test saw %d hits", n)
	}

	// Bad grants get clear errors.
	for _, bad := range []struct{ target, host string }{
		{alice.target, "127.0.0.1"}, {alice.target, "[::1]"}, {alice.target, "*.granted.test"},
		{alice.target, "granted.test:80"}, {alice.target, "http://granted.test/"}, {alice.target, ""},
		{alice.target, "blocked.test"}, {"no-such-target", "granted.test"},
	} {
		if key, err := cdpguard.GrantHost(g, bad.target, bad.host, "test"); err == nil {
			t.Errorf("grant of %q on %q accepted (user %q)", bad.host, bad.target, key)
		}
	}

	key, err := cdpguard.GrantHost(g, alice.target, "GRANTED.test.", "test")
	if err != nil || key != "alice" {
		t.Fatalf("grantHost = %q, %v", key, err)
	}
	if _, err := cdpguard.GrantHost(g, alice.target, "granted.test", "test"); err != nil {
		t.Fatalf("a repeated grant: %v", err)
	}
	if got := cdpguard.GrantedHosts(g, alice.target); len(got) != 1 || got[0] != "granted.test" {
		t.Errorf("grantedHosts(alice) = %v", got)
	}
	if got := cdpguard.GrantedHosts(g, bob.target); len(got) != 0 {
		t.Errorf("grantedHosts(bob) = %v", got)
	}
	if n := strings.Count(logs.String(), "msg=grant user=alice host=granted.test via=test"); n != 1 {
		t.Errorf("%d grant log lines, want 1:\n%s", n, logs.String())
	}

	// Alice: the page loads (Fetch layer) and its WebSocket connects
	// (egress proxy: Fetch never sees WebSocket handshakes).
	if title := alice.navigate(ctx, origin("granted.test", forAlice)+"/"); title != "grants test page" {
		t.Fatalf("after the grant alice's page title is %q", title)
	}
	if got := alice.eval(ctx, `wsEcho("ws://granted.test:`+strconv.Itoa(forAlice.port)+`/ws")`); got != "echo:ping" {
		t.Errorf("alice's WebSocket to her granted host: %q", got)
	}
	if got := alice.eval(ctx, `workerFetch("/from-worker")`); got != "status 200" || forAlice.pathHits("/from-worker") != 1 {
		t.Errorf("alice's dedicated worker on her granted host: %q, %d hits", got, forAlice.pathHits("/from-worker"))
	}
	// A same-site iframe (same process: its requests name a frame that is
	// no target) loads too.
	alice.eval(ctx, `addFrame("/same-site-frame")`)
	if n := forAlice.pathHits("/same-site-frame"); n != 1 {
		t.Errorf("alice's same-site iframe on her granted host: %d hits", n)
	}

	// Bob, from an allowed page: every way to granted.test is refused, and
	// bob's listener for it sees nothing.
	if title := bob.navigate(ctx, origin("allowed.test", allowed)+"/"); title != "grants test page" {
		t.Fatalf("bob's allowed page: %q", title)
	}
	bob.eval(ctx, `addFrame("http://granted.test:`+strconv.Itoa(forBob.port)+`/cross-site-frame")`)
	bobURL := origin("granted.test", forBob)
	bobBlocked, stopB := bob.c.Subscribe("", "Guard.requestBlocked")
	defer stopB()
	aliceBlocked, stopA := alice.c.Subscribe("", "Guard.requestBlocked")
	defer stopA()
	bob.call(ctx, "", "Guard.enable", nil, nil)
	alice.call(ctx, "", "Guard.enable", nil, nil)
	if got := bob.eval(ctx, `wsEcho("ws://granted.test:`+strconv.Itoa(forBob.port)+`/ws")`); strings.HasPrefix(got, "echo") {
		t.Errorf("bob's WebSocket to alice's granted host connected: %q", got)
	}
	// The refusal came from bob's own proxy listener: it is logged as
	// bob's and told to bob's agents only.
	wantURL := "granted.test:" + strconv.Itoa(forBob.port)
	if !waitBlocked(ctx, bob.c, bobBlocked, wantURL) {
		t.Errorf("bob got no Guard.requestBlocked for %s", wantURL)
	}
	if waitBlocked(ctx, alice.c, aliceBlocked, wantURL) {
		t.Errorf("alice was told about bob's refused connection to %s", wantURL)
	}
	if !strings.Contains(logs.String(), "url="+wantURL+" host=granted.test reason=\"host \\\"granted.test\\\" is not in the allowlist\" resource_type=Connection user=bob") {
		t.Errorf("no egress-proxy block line for bob's WebSocket:\n%s", logs.String())
	}
	if got := bob.eval(ctx, `fetchText("`+bobURL+`/fetch")`); !strings.HasPrefix(got, "error") {
		t.Errorf("bob's fetch of alice's granted host: %q", got)
	}
	// Bob aims at alice's own proxy listener, by fetch and by WebSocket.
	aliceProxy := cdpguard.UserProxyAddr(g, "alice")
	if aliceProxy == "" || aliceProxy == cdpguard.UserProxyAddr(g, "bob") || aliceProxy == cdpguard.SharedProxyAddr(g) {
		t.Fatalf("proxy listeners: alice %q, bob %q, shared %q", aliceProxy, cdpguard.UserProxyAddr(g, "bob"), cdpguard.SharedProxyAddr(g))
	}
	bob.eval(ctx, `fetchText("http://`+aliceProxy+`/")`)
	for _, p := range []string{aliceProxy, cdpguard.SharedProxyAddr(g)} {
		if got := bob.eval(ctx, `wsEcho("ws://`+p+`/")`); strings.HasPrefix(got, "echo") {
			t.Errorf("bob's WebSocket to the proxy listener %s: %q", p, got)
		}
	}
	// Bob cannot point a context of his at alice's listener, and a context
	// bob creates gets his own listener.
	if _, err := bob.c.Call(ctx, "", "Target.createBrowserContext", map[string]any{"proxyServer": "http://" + aliceProxy}); err == nil {
		t.Error("bob created a context with alice's proxy listener")
	}
	bob2 := bob.inNewContext(ctx)
	if title := bob2.navigate(ctx, origin("allowed.test", allowed)+"/"); title != "grants test page" {
		t.Fatalf("bob's second context: %q", title)
	}
	if got := bob2.eval(ctx, `wsEcho("ws://granted.test:`+strconv.Itoa(forBob.port)+`/ws")`); strings.HasPrefix(got, "echo") {
		t.Errorf("a WebSocket from bob's own second context to alice's granted host: %q", got)
	}
	if title := bob.navigate(ctx, bobURL+"/"); !strings.HasPrefix(title, "Blocked by cdpguard") {
		t.Errorf("bob's navigation to alice's granted host: title %q", title)
	}
	if n := forBob.hits(); n != 0 {
		t.Errorf("bob's granted.test listener saw %d hits", n)
	}
	if !strings.Contains(logs.String(), "reason=\"target is the proxy itself\" resource_type=Connection user=bob") {
		t.Errorf("no proxy refusal of bob's requests to alice's listener in the log:\n%s", logs.String())
	}
	// An agent has no CDP command that grants.
	for _, m := range []string{"Guard.grant", "Guard.grantHost", "Guard.allow", "Guard.allowHost", "Guard.addGrant", "Guard.setPolicy"} {
		if _, err := bob.c.Call(ctx, "", m, map[string]any{"host": "granted.test", "targetId": bob.target}); err == nil {
			t.Errorf("%s was answered without an error", m)
		}
	}
	if got := cdpguard.GrantedHosts(g, bob.target); len(got) != 0 {
		t.Errorf("bob has grants after trying Guard methods: %v", got)
	}
	// Control: bob's listener is reachable for alice, whose grant covers
	// the host on any port.
	if got := alice.eval(ctx, `wsEcho("ws://granted.test:`+strconv.Itoa(forBob.port)+`/ws")`); got != "echo:ping" || forBob.hits() == 0 {
		t.Errorf("control: alice's WebSocket to bob's listener: %q, %d hits", got, forBob.hits())
	}
	// A context alice creates has her grants too.
	alice2ctx := alice.inNewContext(ctx)
	if title := alice2ctx.navigate(ctx, origin("granted.test", forAlice)+"/second"); title != "grants test page" {
		t.Errorf("alice's second context on her granted host: %q", title)
	}
	if got := alice2ctx.eval(ctx, `wsEcho("ws://granted.test:`+strconv.Itoa(forAlice.port)+`/ws")`); got != "echo:ping" {
		t.Errorf("alice's second context's WebSocket: %q", got)
	}
	// ... and so is a cross-site iframe of it in alice's allowed page (an
	// out-of-process frame, whose first request comes before its target).
	if title := alice.navigate(ctx, origin("allowed.test", allowed)+"/"); title != "grants test page" {
		t.Fatalf("alice's allowed page: %q", title)
	}
	alice.eval(ctx, `addFrame("http://granted.test:`+strconv.Itoa(forBob.port)+`/cross-site-frame")`)
	if n := forBob.pathHits("/cross-site-frame"); n != 1 {
		t.Errorf("alice's cross-site iframe of her granted host: %d hits", n)
	}

	// /policy and Guard.getPolicy show the grant to alice only.
	if got := httpPolicy(t, g, "alice").hosts(); got != "granted.test/test" {
		t.Errorf("/policy for alice: grants %q", got)
	}
	if got := httpPolicy(t, g, "bob").hosts(); got != "" {
		t.Errorf("/policy for bob: grants %q", got)
	}
	if p := alice.guardPolicy(ctx); p.hosts() != "granted.test/test" || time.Since(p.Grants[0].At) > time.Minute {
		t.Errorf("Guard.getPolicy for alice: %+v", p)
	}
	if got := bob.guardPolicy(ctx).hosts(); got != "" {
		t.Errorf("Guard.getPolicy for bob: grants %q", got)
	}

	// Chrome's default context has its own scope, served by the shared
	// listener; a user's grant is not in it and its grant is in no user's.
	def, err := cdpguard.DefaultContextPage(ctx, g)
	if err != nil || def == "" {
		t.Fatalf("default context page: %q %v", def, err)
	}
	defURL := origin("default.test", forDefault) + "/"
	if code := proxyGet(t, cdpguard.SharedProxyAddr(g), defURL); code != http.StatusForbidden {
		t.Errorf("shared listener before the default grant: %d", code)
	}
	if key, err := cdpguard.GrantHost(g, def, "default.test", "test"); err != nil || key != "(default context)" {
		t.Fatalf("default-context grant: %q %v", key, err)
	}
	if code := proxyGet(t, cdpguard.SharedProxyAddr(g), defURL); code != http.StatusOK {
		t.Errorf("shared listener after the default grant: %d", code)
	}
	if code := proxyGet(t, aliceProxy, defURL); code != http.StatusForbidden {
		t.Errorf("alice's listener let the default context's grant through: %d", code)
	}
	if code := proxyGet(t, cdpguard.SharedProxyAddr(g), origin("granted.test", forAlice)+"/"); code != http.StatusForbidden {
		t.Errorf("the shared listener let alice's grant through: %d", code)
	}
	if title := alice.navigate(ctx, defURL); !strings.HasPrefix(title, "Blocked by cdpguard") {
		t.Errorf("alice reached the default context's granted host: %q", title)
	}

	// MCP tools run as the user's agent: carol's grant opens the host for
	// her tools, and blocked-URL errors name it; bob's tools stay refused.
	carol := newGrantAgent(ctx, t, g, "carol")
	if _, err := cdpguard.GrantHost(g, carol.target, "carol.test", "test"); err != nil {
		t.Fatal(err)
	}
	carolURL := origin("carol.test", forDefault) + "/carol"
	if res := mcpCall(ctx, t, g, "carol", "browser_navigate", map[string]any{"url": carolURL}); res.IsError || forDefault.pathHits("/carol") != 1 {
		t.Errorf("carol's MCP navigate to her granted host: error=%v, %d hits: %s", res.IsError, forDefault.pathHits("/carol"), mcpText(res))
	}
	if res := mcpCall(ctx, t, g, "carol", "browser_navigate", map[string]any{"url": "http://other.test/"}); !res.IsError || !strings.Contains(mcpText(res), "Also allowed for this session: carol.test.") {
		t.Errorf("carol's blocked-URL error does not name her grant: %s", mcpText(res))
	}
	if res := mcpCall(ctx, t, g, "bob", "browser_navigate", map[string]any{"url": carolURL}); !res.IsError || strings.Contains(mcpText(res), "Also allowed") {
		t.Errorf("bob's MCP navigate to carol's granted host: %s", mcpText(res))
	}
	if n := forDefault.pathHits("/carol"); n != 1 {
		t.Errorf("carol.test saw %d hits, want carol's 1", n)
	}

	// Alice's session ends: her grants and her listener go.
	alice.c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cdpguard.DisposeUser(ctx, g, "alice")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's session was not disposed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c, err := net.DialTimeout("tcp", aliceProxy, time.Second); err == nil {
		_ = c.Close()
		t.Error("alice's proxy listener still accepts connections after her session ended")
	}
	if got := httpPolicy(t, g, "alice").hosts(); got != "" {
		t.Errorf("/policy for alice after her session ended: %q", got)
	}
	alice2 := newGrantAgent(ctx, t, g, "alice")
	if got := cdpguard.GrantedHosts(g, alice2.target); len(got) != 0 {
		t.Errorf("alice's new session inherited grants: %v", got)
	}
	before := forAlice.hits()
	if title := alice2.navigate(ctx, origin("granted.test", forAlice)+"/"); !strings.HasPrefix(title, "Blocked by cdpguard") {
		t.Errorf("alice's new session reached granted.test: %q", title)
	}
	if n := forAlice.hits() - before; n != 0 {
		t.Errorf("granted.test saw %d hits from alice's new session", n)
	}
	if _, err := cdpguard.GrantHost(g, alice.target, "late.test", "test"); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("a grant on a disposed session's tab: %v", err)
	}
	code, body := httpGet(t, g.URL()+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "cdpguard_grants_total 3") {
		t.Errorf("metrics: %d, want cdpguard_grants_total 3", code)
	}
}
