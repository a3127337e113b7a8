package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/headed"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// rcQuiet is longer than the guard's quiet window after an agent's input
// (a click within it is refused as the agent's): attacks that must not be
// refused for that reason alone wait it out first.
const rcQuiet = 1100 * time.Millisecond

// rcArm is longer than the controls' arming delay (a click on a button
// shown for less is refused), so a refusal is not that check's doing.
const rcArm = 800 * time.Millisecond

// rcVictim is a real listener on a host outside the allowlist that one
// attack tries to get granted: any request or connection it sees means
// the attack opened the host.
type rcVictim struct {
	name  string
	port  int
	hits  atomic.Int64
	conns atomic.Int64
	mu    sync.Mutex
	paths []string
}

// requested returns how many requests asked for a URI containing s.
func (v *rcVictim) requested(s string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, p := range v.paths {
		if strings.Contains(p, s) {
			n++
		}
	}
	return n
}

func (v *rcVictim) url() string { return "http://" + v.name + ":" + strconv.Itoa(v.port) + "/" }

// rcListen starts a counting listener for name (NAME.test).
func rcListen(t *testing.T, name string) *rcVictim {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v := &rcVictim{name: name + ".test", port: ln.Addr().(*net.TCPAddr).Port}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v.hits.Add(1)
			v.mu.Lock()
			v.paths = append(v.paths, r.URL.RequestURI())
			v.mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<!doctype html><p>%s reached</p>", v.name)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				v.conns.Add(1)
			}
		},
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return v
}

// rcLog keeps the guard's controls log records (grants and refusals).
type rcLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *rcLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *rcLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *rcLog) WithGroup(string) slog.Handler            { return l }
func (l *rcLog) Handle(_ context.Context, r slog.Record) error {
	s := r.Message
	r.Attrs(func(a slog.Attr) bool { s += " " + a.Key + "=" + a.Value.String(); return true })
	if !strings.HasPrefix(r.Message, "controls") && !strings.Contains(r.Message, "grant") {
		return nil
	}
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
	return nil
}

// about returns the records that mention target.
func (l *rcLog) about(target string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.Contains(s, target) {
			out = append(out, s)
		}
	}
	return out
}

// rcEnv is the scene: a headed Chromium on Xvfb the test started, the
// human's direct connection to it, a guard attached with controls on,
// agents alice and bob through the guard, and one victim per attack.
type rcEnv struct {
	t       *testing.T // the whole test: victims live as long as it
	d       *headed.Display
	h       *testhosts.Hosts
	g       *cdpguard.Guard
	chrome  *headed.Chromium
	alice   *cdptest.Client
	bob     *cdptest.Client
	seen    *rcFrames // every frame alice received
	log     *rcLog
	victims []*rcVictim
	granted map[string]bool // victims a human legitimately granted
}

// rcFrames records raw frames.
type rcFrames struct {
	mu  sync.Mutex
	all []string
}

func (f *rcFrames) add(m *cdptest.Message) {
	f.mu.Lock()
	f.all = append(f.all, string(m.Raw))
	f.mu.Unlock()
}

func (f *rcFrames) text() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.all, "\n")
}

func rcSetup(t *testing.T, path string) *rcEnv {
	t.Helper()
	e := &rcEnv{t: t, d: headed.StartXvfb(t), h: testhosts.Start(t), log: &rcLog{}, seen: &rcFrames{}, granted: map[string]bool{}}
	e.chrome = headed.StartChromium(t, e.d, path, "--host-resolver-rules=MAP *.test 127.0.0.1")
	cfg := guardConfig(t)
	cfg.Controls = true
	cfg.Logger = slog.New(e.log)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g, err := cdpguard.Attach(ctx, e.chrome.URL, cfg)
	if err != nil {
		t.Fatalf("cdpguard.Attach: %v", err)
	}
	cdptest.CloseOnCleanup(t, g)
	cdptest.WaitHTTP(t, g.URL()+"/readyz", "ok", 20*time.Second)
	e.g = g
	hdr := http.Header{userHeader: {"alice"}}
	ws, err := cdptest.BrowserURL(ctx, g.URL(), hdr)
	if err != nil {
		t.Fatal(err)
	}
	if e.alice, err = cdptest.Dial(ctx, ws, cdptest.Options{Header: hdr, OnMessage: e.seen.add}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.alice.Close)
	e.bob = dialAgent(ctx, t, g.URL(), "bob")
	return e
}

// rcPage is an explanation page alice opened, seen by alice and the human.
type rcPage struct {
	v      *rcVictim
	target string
	agent  string // alice's session
	human  string // the human's direct session
	at     headed.Point
	shown  time.Time // when the test first saw the button
}

// victim starts a new victim for one attack; it listens until the whole
// test ends, so the sweep reaches it.
func (e *rcEnv) victim(_ *testing.T, name string) *rcVictim {
	v := rcListen(e.t, name)
	e.victims = append(e.victims, v)
	return v
}

// explain makes alice open v's URL (the guard answers with its explanation
// page), attaches the human and waits for the Allow button.
func (e *rcEnv) explain(ctx context.Context, t *testing.T, v *rcVictim, background bool) *rcPage {
	t.Helper()
	return e.explainIn(ctx, t, v, map[string]any{"background": background})
}

// explainIn is explain with more Target.createTarget params.
func (e *rcEnv) explainIn(ctx context.Context, t *testing.T, v *rcVictim, params map[string]any) *rcPage {
	t.Helper()
	start := time.Now()
	params["url"] = v.url()
	res, err := e.alice.Call(ctx, "", "Target.createTarget", params)
	if err != nil {
		t.Fatalf("alice opens %s: %v", v.url(), err)
	}
	var ct struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &ct)
	p := &rcPage{v: v, target: ct.TargetID}
	if p.agent, err = headed.AttachPage(ctx, e.alice, p.target); err != nil {
		t.Fatal(err)
	}
	if p.human, err = headed.AttachPage(ctx, e.chrome.Direct, p.target); err != nil {
		t.Fatal(err)
	}
	e.waitButton(ctx, t, p)
	t.Logf("explanation page for %s ready in %v", v.name, time.Since(start).Round(time.Millisecond))
	return p
}

// waitButton waits (bounded) for p's Allow button and records its centre.
func (e *rcEnv) waitButton(ctx context.Context, t *testing.T, p *rcPage) {
	t.Helper()
	deadline := time.Now().Add(8 * time.Second)
	for {
		n, err := headed.FindNode(ctx, e.chrome.Direct, p.human, headed.ByTag("button", "Allow "+p.v.name))
		if err == nil {
			if p.at, err = headed.Center(ctx, e.chrome.Direct, p.human, n.BackendNodeID); err == nil {
				p.shown = time.Now()
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Allow %s button on the explanation page: %v", p.v.name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// agentButton is the button as alice finds it (DOM.getDocument pierce
// through the guard): backend node id and centre.
func (e *rcEnv) agentButton(ctx context.Context, t *testing.T, p *rcPage) (int64, headed.Point) {
	t.Helper()
	n, err := headed.FindNode(ctx, e.alice, p.agent, headed.ByTag("button", "Allow"))
	if err != nil {
		t.Logf("alice cannot find the Allow button: %v", err)
		return 0, p.at
	}
	at, err := headed.Center(ctx, e.alice, p.agent, n.BackendNodeID)
	if err != nil {
		return n.BackendNodeID, p.at
	}
	return n.BackendNodeID, at
}

// humanClick is the human's click on p's button, on the direct connection.
func (e *rcEnv) humanClick(ctx context.Context, t *testing.T, p *rcPage) {
	t.Helper()
	if err := headed.DispatchClick(ctx, e.chrome.Direct, p.human, p.at); err != nil {
		t.Fatalf("human click: %v", err)
	}
}

// xClick is the human's real click (xdotool) on p's button, mapped to the
// screen with the human's direct connection.
func (e *rcEnv) xClick(ctx context.Context, t *testing.T, p *rcPage) {
	t.Helper()
	at, err := headed.ScreenPoint(ctx, e.chrome.Direct, p.human, p.target, p.at)
	rcMust(t, "screen point", err)
	rcMust(t, "human X click", e.d.Human().Click(ctx, at))
}

// agentEval evaluates expr in the main world of p as alice.
func (e *rcEnv) agentEval(ctx context.Context, t *testing.T, p *rcPage, expr string) {
	t.Helper()
	if err := headed.Eval(ctx, e.alice, p.agent, expr, nil); err != nil {
		t.Fatalf("alice evaluates: %v", err)
	}
}

// decided waits (bounded) until the guard logged a decision about p's
// target after n earlier ones, and returns the records: proof that the
// attack reached the guard's check at all.
func (e *rcEnv) decided(t *testing.T, p *rcPage, n int, d time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if got := e.log.about(p.target); len(got) > n {
			time.Sleep(100 * time.Millisecond)
			return e.log.about(p.target)
		}
		time.Sleep(30 * time.Millisecond)
	}
	return e.log.about(p.target)
}

// sweep checks every victim nobody legitimately granted: zero requests and
// connections so far, and still none when alice's page on the allowed host
// fetches each of them (the Fetch judge and the egress proxy both apply
// alice's grants, so a grant an attack won shows here).
func (e *rcEnv) sweep(ctx context.Context, t *testing.T) {
	t.Helper()
	_, s, err := headed.OpenPage(ctx, e.alice, e.h.PageURL("/page.html"))
	rcMust(t, "alice's allowed page", err)
	var urls []string
	for _, v := range e.victims {
		if !e.granted[v.name] {
			urls = append(urls, v.url()+"sweep")
		}
	}
	list, _ := json.Marshal(urls)
	var got []string
	rcMust(t, "fetch every victim", headed.Eval(ctx, e.alice, s, `Promise.all(`+string(list)+`.map(u =>
		fetch(u, {mode: 'no-cors', cache: 'no-store'}).then(() => 'reached ' + u, (err) => 'failed ' + u)))`, &got))
	t.Logf("alice's fetches: %q", got)
	for _, v := range e.victims {
		if e.granted[v.name] {
			continue
		}
		if h, c := v.hits.Load(), v.conns.Load(); h > 0 || c > 0 {
			t.Errorf("LEAK: %s was opened by an attack: %d requests, %d connections", v.name, h, c)
		}
	}
	// The control: the host a human granted is reached the same way.
	for _, v := range e.victims {
		if e.granted[v.name] {
			rcMust(t, "fetch the granted host", headed.Eval(ctx, e.alice, s, `fetch(`+strconv.Quote(v.url()+"sweep")+`, {mode: 'no-cors'}).then(() => 1)`, nil))
			if v.requested("sweep") == 0 {
				t.Errorf("control: alice's fetch did not reach %s, which a human granted", v.name)
			}
		}
	}
}

func rcMust(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestRedTeamControls attacks the controls (issue 12) as a hostile agent
// and a hostile page, beyond the forgery list, in a headed
// Chromium the guard is attached to. Each attack aims at its own real
// listener on a host outside the allowlist; the sweep at the end fails on
// any request or connection one of them saw. A human's click on the real
// button (the control) must grant its host, for alice only.
func TestRedTeamControls(t *testing.T) {
	path := needHeaded(t)
	if directMode() {
		t.Skip("the controls are the guard's; nothing to attack in a plain Chromium")
	}
	e := rcSetup(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	t.Run("debugger-condition", func(t *testing.T) { rcDebuggerCondition(ctx, t, e) })
	t.Run("reveal-late", func(t *testing.T) { rcRevealLate(ctx, t, e) })
	t.Run("background-tab", func(t *testing.T) { rcBackgroundTab(ctx, t, e) })
	t.Run("other-window", func(t *testing.T) { rcOtherWindow(ctx, t, e) })
	t.Run("move-under-pointer", func(t *testing.T) { rcMoveUnderPointer(ctx, t, e) })
	t.Run("debugger-pause", func(t *testing.T) { rcDebuggerPause(ctx, t, e) })
	t.Run("switch-document", func(t *testing.T) { rcSwitchDocument(ctx, t, e) })
	t.Run("history-back", func(t *testing.T) { rcHistoryBack(ctx, t, e) })
	t.Run("tamper-label", func(t *testing.T) { rcTamperLabel(ctx, t, e) })
	t.Run("overlay", func(t *testing.T) { rcOverlay(ctx, t, e) })
	t.Run("names", func(t *testing.T) { rcNames(ctx, t, e) })
	t.Run("human-control", func(t *testing.T) { rcHumanControl(ctx, t, e) })
	t.Run("agent-input", func(t *testing.T) { rcAgentInput(ctx, t, e) })
	t.Run("sweep", func(t *testing.T) { e.sweep(ctx, t) })
}

// rcDebuggerCondition: alice finds the controls script by guessing script
// ids (Debugger.getScriptSource), then sets a breakpoint in it whose
// condition (run in the controls world, where the breakpoint is) calls the
// binding with a forged report, later than the guard's quiet window.
func rcDebuggerCondition(ctx context.Context, t *testing.T, e *rcEnv) {
	src, err := os.ReadFile("../js/controls.js")
	if err != nil {
		t.Fatalf("the controls' source: %v", err)
	}
	v := e.victim(t, "rc-debugger")
	p := e.explain(ctx, t, v, false)
	rcMust(t, "Debugger.enable", ignore(e.alice.Call(ctx, p.agent, "Debugger.enable", nil)))
	defer func() { _, _ = e.alice.Call(ctx, p.agent, "Debugger.disable", nil) }()
	script := ""
	for id := 1; id <= 400 && script == ""; id++ {
		res, err := e.alice.Call(ctx, p.agent, "Debugger.getScriptSource", map[string]any{"scriptId": strconv.Itoa(id)})
		if err != nil {
			continue
		}
		var s struct {
			ScriptSource string `json:"scriptSource"`
		}
		if json.Unmarshal(res, &s) == nil && s.ScriptSource == string(src) {
			script = strconv.Itoa(id)
		}
	}
	if script == "" {
		t.Logf("the controls script is not readable by guessing script ids (good)")
		return
	}
	t.Logf("alice read the controls script by guessing its id: %s", script)
	// A line in the intersection observer's callback.
	i := strings.Index(string(src), "es[es.length - 1].isVisible")
	if i < 0 {
		t.Fatalf("no intersection observer callback in js/controls.js to break in")
	}
	before := string(src[:i])
	line := strings.Count(before, "\n")
	col := len(before) - strings.LastIndex(before, "\n") - 1
	cond := `(() => { if (!globalThis.__rc) { globalThis.__rc = 1; setTimeout(() => { const f = globalThis[state.binding];
		if (typeof f === 'function') f(JSON.stringify({action: 'allow', trusted: true, active: true, armed: true, visible: true})); }, 1300); } return false; })()`
	_, err = e.alice.Call(ctx, p.agent, "Debugger.setBreakpoint", map[string]any{
		"location": map[string]any{"scriptId": script, "lineNumber": line, "columnNumber": col}, "condition": cond})
	if err != nil {
		t.Logf("conditional breakpoint in the controls refused: %v", err)
		return
	}
	// The intersection observer runs its callback when the badge's
	// visibility changes; the page's main world can change it.
	n := len(e.log.about(p.target))
	e.agentEval(ctx, t, p, `(() => { const h = document.querySelector('cdpguard-controls');
		h.style.setProperty('opacity', '0.5', 'important'); setTimeout(() => h.style.setProperty('opacity', '1', 'important'), 300); })()`)
	t.Logf("guard: %q", e.decided(t, p, n, 3*time.Second))
}

// rcRevealLate: the page keeps the controls invisible (opacity 0) long
// after the button was made, then shows it just before the human clicks
// where something else was: the button was visible for 250 ms.
func rcRevealLate(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-reveal")
	p := e.explain(ctx, t, v, false)
	e.agentEval(ctx, t, p, `document.querySelector('cdpguard-controls').style.setProperty('opacity', '0', 'important'), 1`)
	time.Sleep(rcArm + 400*time.Millisecond)
	e.agentEval(ctx, t, p, `document.querySelector('cdpguard-controls').style.setProperty('opacity', '1', 'important'), 1`)
	time.Sleep(max(0, rcQuiet-rcArm-400*time.Millisecond) + 250*time.Millisecond)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	if got := e.decided(t, p, n, 500*time.Millisecond); len(got) > n {
		t.Logf("guard: %q", got[n:])
	} else {
		t.Logf("the click did nothing: the page's change to the badge redrew it, and the new button is disabled while it arms")
	}
}

// rcBackgroundTab: alice prepares the explanation page in a background tab
// until its button is armed, then brings the tab to the front just before
// the human clicks.
func rcBackgroundTab(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-background")
	p := e.explain(ctx, t, v, true)
	time.Sleep(rcQuiet)
	rcMust(t, "activateTarget", ignore(e.alice.Call(ctx, "", "Target.activateTarget", map[string]any{"targetId": p.target})))
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	t.Logf("guard: %q", e.decided(t, p, n, 2*time.Second))
}

// rcOtherWindow: alice prepares the explanation page in a window of its
// own, puts another window of hers over it until the button is armed, then
// raises the explanation page's window just before the human clicks.
func rcOtherWindow(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-window")
	p := e.explainIn(ctx, t, v, map[string]any{"newWindow": true})
	res, err := e.alice.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "newWindow": true})
	rcMust(t, "covering window", err)
	var ct struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &ct)
	rcMust(t, "raise the cover", ignore(e.alice.Call(ctx, "", "Target.activateTarget", map[string]any{"targetId": ct.TargetID})))
	time.Sleep(rcQuiet)
	rcMust(t, "raise the explanation", ignore(e.alice.Call(ctx, "", "Target.activateTarget", map[string]any{"targetId": p.target})))
	// The human clicks on the screen (X input) 250 ms later: the click lands
	// on whatever window is on top by then.
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	e.xClick(ctx, t, p)
	t.Logf("guard: %q", e.decided(t, p, n, 2*time.Second))
}

// rcMoveUnderPointer: the human is about to click at a point where the
// button is not; the page's main world translates the document (a
// translation keeps the button "visible" to IntersectionObserver v2) so the
// armed button lands under the pointer 250 ms before the click.
func rcMoveUnderPointer(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-move")
	p := e.explain(ctx, t, v, false)
	time.Sleep(rcQuiet)
	target := headed.Point{X: 300, Y: 200}
	// A transform makes the root the fixed badge's containing block, so
	// measure where the button went and correct once.
	dx, dy := target.X-p.at.X, target.Y-p.at.Y
	for i := 0; i < 2; i++ {
		e.agentEval(ctx, t, p, fmt.Sprintf(`document.documentElement.style.transform = 'translate(%fpx, %fpx)', 1`, dx, dy))
		n, err := headed.FindNode(ctx, e.chrome.Direct, p.human, headed.ByTag("button", "Allow "+v.name))
		rcMust(t, "find the moved button", err)
		at, err := headed.Center(ctx, e.chrome.Direct, p.human, n.BackendNodeID)
		rcMust(t, "centre of the moved button", err)
		dx, dy = dx+target.X-at.X, dy+target.Y-at.Y
	}
	// Back home until the button is armed again, then one clean jump.
	e.agentEval(ctx, t, p, `document.documentElement.style.transform = '', 1`)
	time.Sleep(rcArm)
	e.agentEval(ctx, t, p, fmt.Sprintf(`document.documentElement.style.transform = 'translate(%fpx, %fpx)', 1`, dx, dy))
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	rcMust(t, "human click", headed.DispatchClick(ctx, e.chrome.Direct, p.human, target))
	got := e.decided(t, p, n, 2*time.Second)
	if len(got) == n {
		t.Logf("the click at %v did not reach the moved button", target)
	}
	t.Logf("guard: %q", got)
}

// rcDebuggerPause: the human clicks 250 ms after the explanation page's tab
// came to the front (too early: arming restarted), and alice pauses the
// controls' click handler with an event-listener breakpoint until the
// arming time has passed, then turns the debugger off so the handler and
// the binding call run with no agent debugging.
func rcDebuggerPause(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-pause")
	p := e.explain(ctx, t, v, true)
	paused, stop := e.alice.Subscribe(p.agent, "Debugger.paused")
	defer stop()
	rcMust(t, "Debugger.enable", ignore(e.alice.Call(ctx, p.agent, "Debugger.enable", nil)))
	defer func() { _, _ = e.alice.Call(ctx, p.agent, "Debugger.disable", nil) }()
	rcMust(t, "listener breakpoint", ignore(e.alice.Call(ctx, p.agent, "DOMDebugger.setEventListenerBreakpoint", map[string]any{"eventName": "click"})))
	time.Sleep(rcQuiet)
	// The tab comes to the front (not by an agent: by the test's own
	// connection, as a human switching tabs would).
	rcMust(t, "front", ignore(e.chrome.Direct.Call(ctx, "", "Target.activateTarget", map[string]any{"targetId": p.target})))
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	click := make(chan error, 1)
	go func() { click <- headed.DispatchClick(ctx, e.chrome.Direct, p.human, p.at) }()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := e.alice.Wait(pctx, paused, "the pause in the click handler")
	cancel()
	if err != nil {
		t.Logf("the human's click did not pause: %v", err)
	} else {
		time.Sleep(rcArm)
	}
	_, _ = e.alice.Call(ctx, p.agent, "DOMDebugger.removeEventListenerBreakpoint", map[string]any{"eventName": "click"})
	_, _ = e.alice.Call(ctx, p.agent, "Debugger.disable", nil)
	if err := <-click; err != nil {
		t.Logf("human click: %v", err)
	}
	got := e.decided(t, p, n, 2*time.Second)
	t.Logf("guard: %q", got[n:])
}

// rcSwitchDocument: the human is about to click an armed button for a
// harmless host; alice navigates the tab to another blocked host, whose
// button appears in the same place, 250 ms before the click.
func rcSwitchDocument(ctx context.Context, t *testing.T, e *rcEnv) {
	harmless := e.victim(t, "rc-switch-harmless")
	evil := e.victim(t, "rc-switch-evil")
	p := e.explain(ctx, t, harmless, false)
	time.Sleep(rcQuiet)
	rcMust(t, "alice navigates", ignore(e.alice.Call(ctx, p.agent, "Page.navigate", map[string]any{"url": evil.url()})))
	p.v = evil
	e.waitButton(ctx, t, p)
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	if got := e.decided(t, p, n, 500*time.Millisecond); len(got) > n {
		t.Logf("guard: %q", got[n:])
	} else {
		t.Logf("the click did nothing: the new button is disabled while it arms")
	}
}

// rcHistoryBack: alice goes from the explanation page of one blocked host
// to another's and back; the human then allows what the button says. Only
// that host may open, not the one the guard saw last.
func rcHistoryBack(ctx context.Context, t *testing.T, e *rcEnv) {
	first := e.victim(t, "rc-history-first")
	second := e.victim(t, "rc-history-second")
	p := e.explain(ctx, t, first, false)
	rcMust(t, "enable Page", ignore(e.alice.Call(ctx, p.agent, "Page.enable", nil)))
	rcMust(t, "to the second", headed.Navigate(ctx, e.alice, p.agent, second.url()))
	res, err := e.alice.Call(ctx, p.agent, "Page.getNavigationHistory", nil)
	rcMust(t, "history", err)
	var h struct {
		CurrentIndex int `json:"currentIndex"`
		Entries      []struct {
			ID  int    `json:"id"`
			URL string `json:"url"`
		} `json:"entries"`
	}
	_ = json.Unmarshal(res, &h)
	if h.CurrentIndex < 1 {
		t.Fatalf("no history to go back in: %s", res)
	}
	rcMust(t, "back", ignore(e.alice.Call(ctx, p.agent, "Page.navigateToHistoryEntry", map[string]any{"entryId": h.Entries[h.CurrentIndex-1].ID})))
	e.waitButton(ctx, t, p) // p.v is first: the button must name it again
	time.Sleep(rcQuiet)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	got := e.decided(t, p, n, 2*time.Second)
	t.Logf("guard: %q", got)
	if strings.Contains(strings.Join(got[n:], " "), "host="+first.name) {
		e.granted[first.name] = true // what the button said: the human's decision
	}
}

// rcTamperLabel: alice rewrites the button's text (DOM.setNodeValue inside
// the closed shadow root, reached with pierce) to name a harmless host,
// 50 ms before the human clicks what it says. The controls must draw
// themselves afresh (a new button that arms again) and the button must
// name the real host once more.
func rcTamperLabel(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-tamper")
	p := e.explain(ctx, t, v, false)
	time.Sleep(rcQuiet)
	root, err := headed.Document(ctx, e.alice, p.agent)
	rcMust(t, "alice's DOM", err)
	text := root.Find(func(n *headed.Node) bool {
		return n.NodeName == "#text" && strings.HasPrefix(n.NodeValue, "Allow "+v.name)
	})
	if text == nil {
		t.Logf("alice does not see the button's text")
		return
	}
	n := len(e.log.about(p.target))
	if _, err := e.alice.Call(ctx, p.agent, "DOM.setNodeValue", map[string]any{"nodeId": text.NodeID, "value": "Allow docs.python.org for this session"}); err != nil {
		t.Logf("DOM.setNodeValue on the button refused: %v", err)
		return
	}
	time.Sleep(50 * time.Millisecond)
	e.humanClick(ctx, t, p)
	if got := e.decided(t, p, n, 500*time.Millisecond); len(got) > n {
		t.Logf("guard: %q", got[n:])
	} else {
		t.Logf("the click did nothing: the redrawn button is disabled while it arms")
	}
	if _, err := headed.FindNode(ctx, e.chrome.Direct, p.human, headed.ByTag("button", "Allow "+v.name+" for this session")); err != nil {
		t.Errorf("after the rewrite the button does not name %s again: %v", v.name, err)
	}
}

// rcOverlay: the page fades the controls and lays a decoy over the button
// that lets clicks through (pointer-events: none).
func rcOverlay(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-overlay")
	p := e.explain(ctx, t, v, false)
	e.agentEval(ctx, t, p, fmt.Sprintf(`(() => { const d = document.createElement('div');
		d.textContent = 'Click to continue';
		d.style.cssText = 'position:fixed;left:%fpx;top:%fpx;width:300px;height:60px;transform:translate(-50%%,-50%%);background:#eee;z-index:2147483647;pointer-events:none';
		document.documentElement.appendChild(d); return 1; })()`, p.at.X, p.at.Y))
	time.Sleep(rcQuiet)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	t.Logf("guard: %q", e.decided(t, p, n, 2*time.Second))
}

// rcNames: the controls world's name, its binding's name and its context
// ids (learnt on the human's direct connection) appear nowhere alice can
// look, and naming them is refused.
func rcNames(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-names")
	p := e.explain(ctx, t, v, false)
	created, stop := e.chrome.Direct.Subscribe(p.human, "Runtime.executionContextCreated")
	defer stop()
	rcMust(t, "human Runtime.enable", ignore(e.chrome.Direct.Call(ctx, p.human, "Runtime.enable", nil)))
	var world string
	var ctxID int64
	var unique string
	for world == "" {
		raw, err := e.chrome.Direct.Wait(ctx, created, "the controls world")
		rcMust(t, "contexts", err)
		var c struct {
			Context struct {
				ID       int64  `json:"id"`
				Name     string `json:"name"`
				UniqueID string `json:"uniqueId"`
			} `json:"context"`
		}
		if json.Unmarshal(raw, &c) == nil && strings.HasPrefix(c.Context.Name, "cdpguard_controls") {
			world, ctxID, unique = c.Context.Name, c.Context.ID, c.Context.UniqueID
		}
	}
	var names []string
	res, err := e.chrome.Direct.Call(ctx, p.human, "Runtime.evaluate", map[string]any{"contextId": ctxID, "returnByValue": true,
		"expression": `Object.getOwnPropertyNames(globalThis).filter(k => k.startsWith('cdpguard'))`})
	rcMust(t, "human reads the world", err)
	var r struct {
		Result struct {
			Value []string `json:"value"`
		} `json:"result"`
	}
	_ = json.Unmarshal(res, &r)
	binding := ""
	for _, n := range r.Result.Value {
		if n != "cdpguardControls" {
			binding = n
		}
	}
	names = append(names, world)
	if binding != "" {
		names = append(names, binding)
	}
	names = append(names, unique)
	t.Logf("secrets: world %s, binding %q, context %d (%s)", world, binding, ctxID, unique)

	// Looking for them.
	look := map[string]string{}
	for _, c := range []struct{ method, expr string }{
		{"Page.getFrameTree", ""},
		{"DOM.getDocument", ""},
		{"Runtime.evaluate", `JSON.stringify(Object.getOwnPropertyNames(globalThis)) + JSON.stringify(performance.getEntries())`},
	} {
		var params any
		switch c.method {
		case "DOM.getDocument":
			params = map[string]any{"depth": -1, "pierce": true}
		case "Runtime.evaluate":
			params = map[string]any{"expression": c.expr, "returnByValue": true}
		}
		res, err := e.alice.Call(ctx, p.agent, c.method, params)
		if err == nil {
			look[c.method] = string(res)
		}
	}
	for _, m := range []string{"Runtime.enable", "Log.enable", "Debugger.enable"} {
		_, _ = e.alice.Call(ctx, p.agent, m, nil)
	}
	for id := 1; id <= 100; id++ {
		if res, err := e.alice.Call(ctx, p.agent, "Debugger.getScriptSource", map[string]any{"scriptId": strconv.Itoa(id)}); err == nil {
			look["script "+strconv.Itoa(id)] = string(res)
		}
	}
	_, _ = e.alice.Call(ctx, p.agent, "Debugger.disable", nil)
	for i, f := range strings.Split(e.seen.text(), "\n") {
		look["frame "+strconv.Itoa(i)] = f
	}
	for what, text := range look {
		for _, n := range names {
			if i := strings.Index(text, n); i >= 0 {
				t.Errorf("LEAK: %s shows %q: %.300s", what, n, text[max(0, i-150):])
			}
		}
	}
	// Naming them. (Runtime.evaluate{uniqueContextId} with the world's
	// uniqueId does reach it; that id is two random 64-bit numbers shown
	// only in executionContextCreated, which agents never get for guard
	// worlds, and the scan above checks it appears nowhere else.)
	for _, c := range []struct {
		method string
		params map[string]any
	}{
		{"Runtime.evaluate", map[string]any{"contextId": ctxID, "expression": "1"}},
		{"Page.createIsolatedWorld", map[string]any{"frameId": p.target, "worldName": world}},
		{"Runtime.addBinding", map[string]any{"name": binding}},
		{"Runtime.addBinding", map[string]any{"name": "x", "executionContextName": world}},
		{"Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": "1", "worldName": world}},
	} {
		if res, err := e.alice.Call(ctx, p.agent, c.method, c.params); err == nil {
			t.Errorf("alice's %s %v was answered (%s), want a refusal", c.method, c.params, res)
		}
	}
}

// rcHumanControl: the human's click on the real button grants its host to
// alice (the guard reloads the page, which reaches the listener), a second
// tab's host stays blocked, and bob still cannot reach the granted host.
func rcHumanControl(ctx context.Context, t *testing.T, e *rcEnv) {
	ok := e.victim(t, "rc-granted")
	other := e.victim(t, "rc-other-tab")
	// The other tab first: the human clicks in the tab in front.
	e.explain(ctx, t, other, false)
	p := e.explain(ctx, t, ok, false)
	time.Sleep(max(rcArm, rcQuiet))
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	deadline := time.Now().Add(5 * time.Second)
	for ok.hits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if ok.hits.Load() == 0 {
		t.Fatalf("control: the human's click did not open %s; guard: %q", ok.name, e.decided(t, p, n, time.Second))
	}
	e.granted[ok.name] = true
	_, s, err := headed.OpenPage(ctx, e.bob, "about:blank")
	rcMust(t, "bob's page", err)
	_ = headed.Navigate(ctx, e.bob, s, ok.url()+"?bob")
	time.Sleep(300 * time.Millisecond)
	if got := ok.requested("bob"); got > 0 {
		t.Errorf("LEAK: bob reached %s, which a human allowed for alice only (%d requests)", ok.name, got)
	}
	ok.mu.Lock()
	t.Logf("%s saw %q", ok.name, ok.paths)
	ok.mu.Unlock()
}

// rcAgentInput: every kind of input alice can send on her own connection,
// aimed at the button (each in its own page).
func rcAgentInput(ctx context.Context, t *testing.T, e *rcEnv) {
	attacks := []struct {
		name string
		do   func(p *rcPage, node int64, at headed.Point)
	}{
		{"mouse", func(p *rcPage, _ int64, at headed.Point) {
			_ = headed.DispatchClick(ctx, e.alice, p.agent, at)
		}},
		{"keys", func(p *rcPage, node int64, _ headed.Point) {
			_, _ = e.alice.Call(ctx, p.agent, "DOM.focus", map[string]any{"backendNodeId": node})
			for _, k := range []map[string]any{
				{"type": "keyDown", "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"},
				{"type": "keyUp", "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13},
				{"type": "keyDown", "key": " ", "code": "Space", "windowsVirtualKeyCode": 32, "text": " "},
				{"type": "keyUp", "key": " ", "code": "Space", "windowsVirtualKeyCode": 32},
			} {
				_, _ = e.alice.Call(ctx, p.agent, "Input.dispatchKeyEvent", k)
			}
			_, _ = e.alice.Call(ctx, p.agent, "Input.insertText", map[string]any{"text": " "})
		}},
		{"touch", func(p *rcPage, _ int64, at headed.Point) {
			_, _ = e.alice.Call(ctx, p.agent, "Input.synthesizeTapGesture", map[string]any{"x": at.X, "y": at.Y})
			_, _ = e.alice.Call(ctx, p.agent, "Input.dispatchTouchEvent", map[string]any{"type": "touchStart", "touchPoints": []any{map[string]any{"x": at.X, "y": at.Y}}})
			_, _ = e.alice.Call(ctx, p.agent, "Input.dispatchTouchEvent", map[string]any{"type": "touchEnd", "touchPoints": []any{}})
			for _, typ := range []string{"mousePressed", "mouseReleased"} {
				_, _ = e.alice.Call(ctx, p.agent, "Input.emulateTouchFromMouseEvent", map[string]any{"type": typ, "x": int(at.X), "y": int(at.Y), "button": "left", "clickCount": 1})
			}
		}},
		{"script-gesture", func(p *rcPage, node int64, _ headed.Point) {
			res, err := e.alice.Call(ctx, p.agent, "DOM.resolveNode", map[string]any{"backendNodeId": node})
			var o struct {
				Object struct {
					ObjectID string `json:"objectId"`
				} `json:"object"`
			}
			if err != nil || json.Unmarshal(res, &o) != nil {
				t.Logf("resolveNode: %v", err)
				return
			}
			_, _ = e.alice.Call(ctx, p.agent, "Runtime.callFunctionOn", map[string]any{"objectId": o.Object.ObjectID, "userGesture": true,
				"functionDeclaration": `function () { this.click(); this.dispatchEvent(new MouseEvent('click', {bubbles: true, composed: true})); }`})
		}},
		{"escaped-method", func(p *rcPage, _ int64, at headed.Point) {
			for i, typ := range []string{"mousePressed", "mouseReleased"} {
				frame := fmt.Sprintf(`{"id":%d,"sessionId":%q,"method":"\u0049nput.dispatchMouseEvent","params":{"type":%q,"x":%f,"y":%f,"button":"left","clickCount":1}}`,
					900000+i, p.agent, typ, at.X, at.Y)
				_ = e.alice.Conn().Write(ctx, 1, []byte(frame))
			}
		}},
	}
	// One page for all: after a refusal the guard tells the page, which
	// enables the button again; each attack must bring its own decision.
	p := e.explain(ctx, t, e.victim(t, "rc-agent-input"), false)
	time.Sleep(rcQuiet) // armed, and past alice's createTarget
	for _, a := range attacks {
		node, at := e.agentButton(ctx, t, p)
		n := len(e.log.about(p.target))
		a.do(p, node, at)
		got := e.decided(t, p, n, time.Second)
		if len(got) == n {
			t.Logf("%s: no click reached the button", a.name)
		} else {
			t.Logf("%s: guard: %q", a.name, got[n:])
		}
		time.Sleep(300 * time.Millisecond) // the button is enabled again
	}
}

// ignore drops a call's result.
func ignore(_ any, err error) error { return err }
