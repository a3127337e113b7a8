package cdpguard_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// grantHost is a test listener for one *.test name: it serves the test
// page at /, echoes one WebSocket message at /ws, and counts every
// connection and request it sees.
type grantHost struct {
	port  int
	conns atomic.Int64
	reqs  atomic.Int64
	paths sync.Map // path → *atomic.Int64
}

func (h *grantHost) pathHits(path string) int64 {
	if n, ok := h.paths.Load(path); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

func (h *grantHost) hits() int64 { return h.conns.Load() + h.reqs.Load() }

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func startGrantHost(t *testing.T, page []byte) *grantHost {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &grantHost{port: ln.Addr().(*net.TCPAddr).Port}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.reqs.Add(1)
		n, _ := h.paths.LoadOrStore(r.URL.Path, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		h.reqs.Add(1)
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		typ, b, err := c.Read(ctx)
		if err == nil {
			_ = c.Write(ctx, typ, b)
		}
		_, _, _ = c.Read(ctx) // until the page closes it
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(countingListener{Listener: ln, n: &h.conns}) }()
	t.Cleanup(func() { _ = srv.Close() })
	return h
}

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

// grantAgent is one user's CDP connection with one tab.
type grantAgent struct {
	t       *testing.T
	c       *cdptest.Client
	target  string
	session string
}

func newGrantAgent(ctx context.Context, t *testing.T, g *cdpguard.Guard, user string) *grantAgent {
	t.Helper()
	hdr := http.Header{"X-Librechat-User": {user}}
	ws, err := cdptest.BrowserURL(ctx, g.URL(), hdr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cdptest.Dial(ctx, ws, cdptest.Options{Header: hdr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	a := &grantAgent{t: t, c: c}
	var created struct {
		TargetID string `json:"targetId"`
	}
	a.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	a.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached)
	a.target, a.session = created.TargetID, attached.SessionID
	a.call(ctx, a.session, "Page.enable", nil, nil)
	return a
}

// inNewContext creates a browser context on a's connection and returns an
// agent for a tab in it.
func (a *grantAgent) inNewContext(ctx context.Context) *grantAgent {
	a.t.Helper()
	var bc struct {
		BrowserContextID string `json:"browserContextId"`
	}
	a.call(ctx, "", "Target.createBrowserContext", map[string]any{}, &bc)
	var created struct {
		TargetID string `json:"targetId"`
	}
	a.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": bc.BrowserContextID}, &created)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	a.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached)
	b := &grantAgent{t: a.t, c: a.c, target: created.TargetID, session: attached.SessionID}
	b.call(ctx, b.session, "Page.enable", nil, nil)
	return b
}

func (a *grantAgent) call(ctx context.Context, session, method string, params, out any) {
	a.t.Helper()
	res, err := a.c.Call(ctx, session, method, params)
	if err != nil {
		a.t.Fatalf("%s: %v", method, err)
	}
	if out != nil {
		if err := jsonv2.Unmarshal(res, out); err != nil {
			a.t.Fatalf("%s: %v", method, err)
		}
	}
}

// navigate loads u in the agent's tab and returns the page's title.
func (a *grantAgent) navigate(ctx context.Context, u string) string {
	a.t.Helper()
	loads, stop := a.c.Subscribe(a.session, "Page.loadEventFired")
	defer stop()
	var r struct {
		ErrorText string `json:"errorText"`
	}
	a.call(ctx, a.session, "Page.navigate", map[string]any{"url": u}, &r)
	if r.ErrorText != "" {
		return "error " + r.ErrorText
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := a.c.Wait(wctx, loads, "load of "+u); err != nil {
		a.t.Fatal(err)
	}
	return a.eval(ctx, "document.title")
}

// eval evaluates expr (awaiting a promise) in the tab and returns it as a
// string.
func (a *grantAgent) eval(ctx context.Context, expr string) string {
	a.t.Helper()
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	a.call(ctx, a.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		a.t.Fatalf("evaluate %s: %v", expr, r.ExceptionDetails)
	}
	s, _ := r.Result.Value.(string)
	return s
}

type policyGrants struct {
	Grants []struct {
		Host string    `json:"host"`
		Via  string    `json:"via"`
		At   time.Time `json:"at"`
	} `json:"grants"`
}

func (p policyGrants) hosts() string {
	var hs []string
	for _, g := range p.Grants {
		hs = append(hs, g.Host+"/"+g.Via)
	}
	return strings.Join(hs, ",")
}

func httpPolicy(t *testing.T, g *cdpguard.Guard, user string) policyGrants {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.URL()+"/policy", nil)
	req.Header.Set("X-LibreChat-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p policyGrants
	if err := jsonv2.Unmarshal(b, &p); err != nil || p.Grants == nil {
		t.Fatalf("/policy for %s: %v %s (want a grants list)", user, err, b)
	}
	return p
}

func (a *grantAgent) guardPolicy(ctx context.Context) policyGrants {
	a.t.Helper()
	var p policyGrants
	a.call(ctx, "", "Guard.getPolicy", nil, &p)
	if p.Grants == nil {
		a.t.Fatal("Guard.getPolicy has no grants list")
	}
	return p
}

// proxyGet fetches u through the egress proxy listener at addr, as the
// browser would, and returns the status code.
func proxyGet(t *testing.T, addr, u string) int {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Second}).Get(u)
	if err != nil {
		t.Fatalf("GET %s via %s: %v", u, addr, err)
	}
	resp.Body.Close()
	return resp.StatusCode
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
	allowed := startGrantHost(t, page)
	forAlice := startGrantHost(t, page) // granted.test: the port alice uses
	forBob := startGrantHost(t, page)   // granted.test: the port bob tries
	forDefault := startGrantHost(t, page)
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

// waitBlocked reports whether a Guard.requestBlocked event for url comes
// on ch within a second.
func waitBlocked(ctx context.Context, c *cdptest.Client, ch <-chan jsonv2.Value, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for {
		v, err := c.Wait(ctx, ch, "Guard.requestBlocked")
		if err != nil {
			return false
		}
		var b struct {
			URL          string `json:"url"`
			ResourceType string `json:"resourceType"`
		}
		if jsonv2.Unmarshal(v, &b) == nil && b.URL == url && b.ResourceType == "Connection" {
			return true
		}
	}
}

// mcpCall calls one MCP tool as user through /mcp.
func mcpCall(ctx context.Context, t *testing.T, g *cdpguard.Guard, user, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "grants-test", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.URL() + "/mcp", HTTPClient: &http.Client{Transport: userRT(user)}}, nil)
	if err != nil {
		t.Fatalf("MCP connect as %s: %v", user, err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("MCP %s as %s: %v", tool, user, err)
	}
	return res
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// userRT sends the session header on every MCP request.
type userRT string

func (u userRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-LibreChat-User", string(u))
	return http.DefaultTransport.RoundTrip(r)
}

func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
