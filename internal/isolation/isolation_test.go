package isolation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// counter hands out ctx-1, ctx-2, ... as the browser would.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) Create(context.Context, string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf("ctx-%d", c.n), nil
}

func (c *counter) Dispose(context.Context, string) error { return nil }

// fakeBrowser answers Browser.getWindowForTarget from a table.
type fakeBrowser struct {
	mu      sync.Mutex
	windows map[string]int64 // target → window
	calls   int
}

func (b *fakeBrowser) Call(_ context.Context, _ string, method string, params any) (jsonv2.Value, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if method != "Browser.getWindowForTarget" {
		return nil, errors.New("unexpected " + method)
	}
	w, ok := b.windows[params.(map[string]any)["targetId"].(string)]
	if !ok {
		return nil, errors.New("no window")
	}
	return jsonv2.Value(fmt.Sprintf(`{"windowId":%d,"bounds":{}}`, w)), nil
}

// fakeAgent owns the sessions it is given; on is the relay's record of
// its sessions attached to targets (session → target).
type fakeAgent struct {
	owned, browser map[string]bool
	on             map[string]string
}

func (a fakeAgent) Owns(s string) bool             { return a.owned[s] }
func (a fakeAgent) IsBrowserSession(s string) bool { return a.browser[s] }
func (a fakeAgent) SessionsOn(target string) (sessions, parents []string) {
	for s, t := range a.on {
		if t == target {
			sessions, parents = append(sessions, s), append(parents, "SA")
		}
	}
	return sessions, parents
}

type undo struct {
	parent, child string
	waiting       bool
}

// world is two users, alice and bob, each with a tab (A1, B1); alice also
// has a WebUI tab (A2, not web content). alice's agent owns session SA
// (browser-level) and SA1 (to A1).
type world struct {
	iso          *Isolator
	reg          *users.Registry
	pg           *pages.Registry
	br           *fakeBrowser
	alice, bob   *users.User
	conn         *Conn
	agent        fakeAgent
	undone       []undo
	browserTgtID string
}

// ContextParams gives a user's context the agent's params and a proxy.
func (w *world) ContextParams(_ *users.User, in map[string]jsonv2.Value) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	out["proxyServer"] = "http://127.0.0.1:1"
	return out, nil
}

// BrowserTarget is the browser's own target id, once set.
func (w *world) BrowserTarget() string { return w.browserTgtID }

func newWorld(t *testing.T) *world {
	t.Helper()
	pg := pages.New()
	w := &world{reg: users.New(&counter{}, pg, 0, nil), pg: pg, br: &fakeBrowser{windows: map[string]int64{}}}
	var err error
	if w.alice, err = w.reg.Acquire(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	if w.bob, err = w.reg.Acquire(t.Context(), "bob"); err != nil {
		t.Fatal(err)
	}
	w.pg.Track("A1", w.alice.Primary)
	w.pg.Track("A2", w.alice.Primary)
	w.pg.MarkWeb("A2", firewall.NotWeb("page", "chrome://settings/"))
	w.pg.Track("B1", w.bob.Primary)
	w.iso = New(Options{
		Users:   w.reg,
		Browser: w.br,
		Scopes:  w,
		Targets: w,
		Undo:    func(p, c string, wait bool) { w.undone = append(w.undone, undo{p, c, wait}) },
	})
	w.conn = NewConn(w.alice)
	w.agent = fakeAgent{owned: map[string]bool{"SA": true, "SA1": true}, browser: map[string]bool{"SA": true}, on: map[string]string{}}
	return w
}

// cmd runs method through the Isolator with its row of the firewall
// table on a browser session, as the guard's pipeline does.
func (w *world) cmd(t *testing.T, method, params string) relay.Verdict {
	t.Helper()
	rule, _ := firewall.Lookup(method, true)
	return w.iso.Command(t.Context(), w.conn, w.agent, relay.Command{Method: method, Params: []byte(params), Browser: true}, rule)
}

func wantRefused(t *testing.T, v relay.Verdict, parts ...string) {
	t.Helper()
	if v.Refuse == "" {
		t.Errorf("not refused: %+v", v)
		return
	}
	for _, p := range parts {
		if !strings.Contains(v.Refuse, p) {
			t.Errorf("refusal %q lacks %q", v.Refuse, p)
		}
	}
}

func wantPassed(t *testing.T, v relay.Verdict) {
	t.Helper()
	if v.Refuse != "" || v.Local != nil {
		t.Errorf("want passed, got %+v", v)
	}
}

func TestTargets(t *testing.T) {
	w := newWorld(t)
	wantRefused(t, w.cmd(t, "Target.attachToTarget", `{"targetId":"B1","flatten":true}`), "Target.attachToTarget", "B1", "not in this user's browser context")
	wantRefused(t, w.cmd(t, "Target.closeTarget", `{"targetId":"nobody"}`), "nobody")
	wantRefused(t, w.cmd(t, "Target.activateTarget", `{"targetId":"A2"}`), "A2", "not web content")
	wantPassed(t, w.cmd(t, "Target.detachFromTarget", `{"targetId":"A2"}`)) // leaving is always allowed
	wantRefused(t, w.cmd(t, "Target.detachFromTarget", `{"sessionId":"SB1"}`), "session SB1 is not this connection's")
	wantRefused(t, w.cmd(t, "Target.getTargetInfo", `{"targetId":`), "unreadable params")
	wantPassed(t, w.cmd(t, "Target.getTargetInfo", ``))

	// A successful attach is the relay's to record (Agent.SessionsOn):
	// TestAttachedIsTheRelays.
	wantPassed(t, w.cmd(t, "Target.attachToTarget", `{"targetId":"A1","flatten":true}`))
	v := w.cmd(t, "Browser.getWindowForTarget", `{"targetId":"A1"}`)
	v.OnReply([]byte(`{"windowId":7,"bounds":{}}`), nil)
	if !w.reg.OwnsWindow(w.alice, 7) {
		t.Error("the window of a reply about alice's target is not alice's")
	}
}

func TestWindows(t *testing.T) {
	w := newWorld(t)
	w.br.windows = map[string]int64{"A1": 3, "B1": 4}
	wantRefused(t, w.cmd(t, "Browser.getWindowBounds", `{}`), "windowId is required")
	wantRefused(t, w.cmd(t, "Browser.setWindowBounds", `{"windowId":4,"bounds":{}}`), "window 4 is not a window of this user's targets")
	wantPassed(t, w.cmd(t, "Browser.setWindowBounds", `{"windowId":3,"bounds":{}}`)) // looked up
	calls := w.br.calls
	wantPassed(t, w.cmd(t, "Browser.getWindowBounds", `{"windowId":3}`)) // learned
	if w.br.calls != calls {
		t.Error("a learned window was looked up again")
	}
	if w.reg.OwnsWindow(w.bob, 3) {
		t.Error("alice's window became bob's")
	}
}

func TestListing(t *testing.T) {
	w := newWorld(t)
	w.agent.on["SA1"] = "A1"
	reply := fmt.Sprintf(`{"targetInfos":[
		{"targetId":"A1","type":"page","url":"http://a.test/","attached":true,"browserContextId":%q},
		{"targetId":"A3","type":"page","url":"http://a.test/","attached":true,"browserContextId":%q},
		{"targetId":"A2","type":"page","url":"chrome://settings/","attached":true,"browserContextId":%q},
		{"targetId":"B1","type":"page","url":"http://b.test/","attached":true,"browserContextId":%q},
		{"targetId":"D1","type":"page","url":"http://d.test/","attached":true}]}`,
		w.alice.Primary, w.alice.Primary, w.alice.Primary, w.bob.Primary)
	v := w.cmd(t, "Target.getTargets", `{}`)
	res, errRaw := v.OnReply([]byte(reply), nil)
	var got struct {
		TargetInfos []cdpmsg.TargetInfo `json:"targetInfos"`
	}
	if errRaw != nil || jsonv2.Unmarshal(res, &got) != nil {
		t.Fatalf("reply %s %s", res, errRaw)
	}
	if len(got.TargetInfos) != 2 || got.TargetInfos[0].TargetID != "A1" || !got.TargetInfos[0].Attached ||
		got.TargetInfos[1].TargetID != "A3" || got.TargetInfos[1].Attached {
		t.Errorf("getTargets filtered to %+v; want A1 (attached) and A3 (shown unattached)", got.TargetInfos)
	}
	if _, errRaw := v.OnReply([]byte(`{`), nil); !strings.Contains(string(errRaw), "unreadable reply") {
		t.Errorf("unreadable reply gave %s", errRaw)
	}
	if _, errRaw := v.OnReply(nil, []byte(`{"code":-1}`)); string(errRaw) != `{"code":-1}` {
		t.Errorf("an error reply must pass unchanged, got %s", errRaw)
	}

	w.reg.AddContext(w.alice, "ctx-own")
	v = w.cmd(t, "Target.getBrowserContexts", `{}`)
	res, _ = v.OnReply(fmt.Appendf(nil, `{"browserContextIds":[%q,%q,"ctx-own"]}`, w.alice.Primary, w.bob.Primary), nil)
	if string(res) != `{"browserContextIds":["ctx-own"]}` {
		t.Errorf("getBrowserContexts filtered to %s; want only alice's own non-default context", res)
	}
}

func TestOwnContexts(t *testing.T) {
	w := newWorld(t)
	wantRefused(t, w.cmd(t, "Target.disposeBrowserContext", fmt.Sprintf(`{"browserContextId":%q}`, w.alice.Primary)), "default context")
	wantRefused(t, w.cmd(t, "Target.disposeBrowserContext", fmt.Sprintf(`{"browserContextId":%q}`, w.bob.Primary)), "is not this user's")

	v := w.cmd(t, "Target.createBrowserContext", `{"disposeOnDetach":true}`)
	if !strings.Contains(string(v.Params), `"proxyServer":"http://127.0.0.1:1"`) || !strings.Contains(string(v.Params), `"disposeOnDetach":true`) {
		t.Errorf("created context params %s lack the guard's proxy or the agent's own params", v.Params)
	}
	v.OnReply([]byte(`{"browserContextId":"ctx-new"}`), nil)
	if !w.reg.OwnsContext(w.alice, "ctx-new") {
		t.Fatal("a created context is not recorded as alice's")
	}
	v = w.cmd(t, "Target.disposeBrowserContext", `{"browserContextId":"ctx-new"}`)
	wantPassed(t, v)
	v.OnReply([]byte(`{}`), nil)
	if w.reg.OwnsContext(w.alice, "ctx-new") {
		t.Error("a disposed context is still recorded")
	}
	wantRefused(t, w.cmd(t, "Target.createBrowserContext", `[]`), "unreadable params")
}

func TestContexts(t *testing.T) {
	w := newWorld(t)
	wantRefused(t, w.cmd(t, "Storage.getCookies", fmt.Sprintf(`{"browserContextId":%q}`, w.bob.Primary)), "is not this user's")
	wantRefused(t, w.cmd(t, "Storage.getCookies", `{"browserContextId":7}`), "is not this user's")
	v := w.cmd(t, "Storage.getCookies", fmt.Sprintf(`{"browserContextId":%q}`, w.alice.Primary))
	if v.Refuse != "" || v.Params != nil {
		t.Errorf("alice's own context must pass unchanged: %+v", v)
	}
	for _, p := range []string{``, `{}`, `{"url":"about:blank"}`} {
		v = w.cmd(t, "Target.createTarget", p)
		if want := fmt.Sprintf(`"browserContextId":%q`, w.alice.Primary); !strings.Contains(string(v.Params), want) {
			t.Errorf("params %q became %s, want %s", p, v.Params, want)
		}
	}
	if v := w.cmd(t, "Browser.getVersion", `{}`); v.Refuse != "" || v.Params != nil || v.OnReply != nil {
		t.Errorf("NoIDs must pass unchanged: %+v", v)
	}
}

func event(method, session, params string) *cdpmsg.Envelope {
	e := &cdpmsg.Envelope{Method: method, SessionID: session, Params: jsonv2.Value(params)}
	if method == "Target.attachedToTarget" {
		e.DecodeSessions()
	}
	return e
}

func TestEvents(t *testing.T) {
	w := newWorld(t)
	ti := func(id, typ, url, ctx string, attached bool) string {
		return fmt.Sprintf(`{"targetInfo":{"targetId":%q,"type":%q,"url":%q,"attached":%v,"browserContextId":%q}}`, id, typ, url, attached, ctx)
	}
	see := func(e *cdpmsg.Envelope) bool { return w.iso.Event(w.conn, w.agent, e) }

	if !see(event("Target.targetCreated", "SA", ti("A1", "page", "http://a.test/", w.alice.Primary, false))) {
		t.Error("alice's own target hidden")
	}
	if see(event("Target.targetCreated", "SA", ti("B1", "page", "http://b.test/", w.bob.Primary, false))) {
		t.Error("bob's target shown to alice")
	}
	if see(event("Target.targetInfoChanged", "SA", ti("A2", "page", "chrome://settings/", w.alice.Primary, false))) {
		t.Error("a WebUI target shown")
	}
	e := event("Target.targetInfoChanged", "SA", ti("A1", "page", "http://a.test/", w.alice.Primary, true))
	if !see(e) || !strings.Contains(string(e.Params), `"attached":false`) {
		t.Errorf("the guard's own attachment shows through: %s", e.Params)
	}
	w.agent.on["SA1"] = "A1" // the relay's record of alice's attach
	e = event("Target.targetInfoChanged", "SA", ti("A1", "page", "http://a.test/", w.alice.Primary, true))
	if !see(e) || !strings.Contains(string(e.Params), `"attached":true`) {
		t.Errorf("alice's own attachment hidden: %s", e.Params)
	}
	if see(event("Target.targetCreated", "SA", `{"targetInfo":`)) {
		t.Error("unreadable event shown")
	}

	// The browser's own target only, and only once it is known.
	browser := ti("BR", "browser", "", "", false)
	if see(event("Target.targetCreated", "SA", browser)) {
		t.Error("a browser target shown before the browser's id is known")
	}
	w.browserTgtID = "BR"
	if !see(event("Target.targetCreated", "SA", browser)) || see(event("Target.targetCreated", "SA", ti("OTHER", "browser", "", "", false))) {
		t.Error("want the browser's own target shown and other browser sessions' targets hidden")
	}

	if !see(event("Target.targetDestroyed", "SA", `{"targetId":"A1"}`)) || see(event("Target.targetDestroyed", "SA", `{"targetId":"B1"}`)) ||
		see(event("Target.targetCrashed", "SA", `{"targetId":"A2"}`)) {
		t.Error("targetDestroyed/targetCrashed: want alice's web targets only")
	}

	if !see(event("Target.detachedFromTarget", "SA", `{"sessionId":"SA1","targetId":"A1"}`)) {
		t.Error("alice's own detach: want shown (the relay forgets the session)")
	}
	if see(event("Target.detachedFromTarget", "SA", `{"sessionId":"SB1","targetId":"B1"}`)) ||
		see(event("Target.receivedMessageFromTarget", "SA", `{"sessionId":"SB1","message":"{}"}`)) {
		t.Error("another connection's session events shown")
	}
	if see(event("Page.loadEventFired", "SA1", `{}`)) == false {
		t.Error("events of other domains must pass")
	}
}

func TestAttachedEvents(t *testing.T) {
	w := newWorld(t)
	w.browserTgtID = "BR"
	see := func(e *cdpmsg.Envelope) bool { return w.iso.Event(w.conn, w.agent, e) }
	att := func(session, id, typ, url, ctx string, waiting bool) string {
		return fmt.Sprintf(`{"sessionId":%q,"targetInfo":{"targetId":%q,"type":%q,"url":%q,"attached":true,"browserContextId":%q},"waitingForDebugger":%v}`, session, id, typ, url, ctx, waiting)
	}
	if !see(event("Target.attachedToTarget", "SA", att("SA1", "A1", "page", "http://a.test/", w.alice.Primary, true))) {
		t.Error("alice's auto-attach to her own tab: want shown (the relay then records it)")
	}
	// A child of alice's own tab, announced on her tab session: hers even
	// though its context is not in the event (an OOPIF's worker, say).
	if !see(event("Target.attachedToTarget", "SA1", att("SW", "W1", "worker", "http://a.test/w.js", "", false))) {
		t.Error("a child attachment on alice's own tab session hidden")
	}
	if len(w.undone) != 0 {
		t.Fatalf("undid %v", w.undone)
	}
	if see(event("Target.attachedToTarget", "SA", att("SX", "B1", "page", "http://b.test/", w.bob.Primary, true))) {
		t.Error("bob's tab shown to alice's auto-attach")
	}
	if see(event("Target.attachedToTarget", "SA", att("SY", "A2", "page", "chrome://settings/", w.alice.Primary, false))) {
		t.Error("a WebUI tab shown to alice's auto-attach")
	}
	want := []undo{{"SA", "SX", true}, {"SA", "SY", false}}
	if fmt.Sprint(w.undone) != fmt.Sprint(want) {
		t.Errorf("undone %v, want %v", w.undone, want)
	}
	e := event("Target.attachedToTarget", "", att("SB", "other-host", "browser", "", "", false))
	if !see(e) || !strings.Contains(string(e.Params), `"targetId":"BR"`) || !strings.Contains(string(e.Params), `"sessionId":"SB"`) {
		t.Errorf("the agent's own browser session must name the browser's target: %s", e.Params)
	}
	if see(&cdpmsg.Envelope{Method: "Target.attachedToTarget", Params: jsonv2.Value(`{`)}) {
		t.Error("an unreadable attachment shown")
	}
}

func TestSetTargetInfoField(t *testing.T) {
	for _, in := range []string{`{`, `{"targetInfo":1}`, `{}`} {
		if out := string(setTargetInfoField([]byte(in), "attached", jsonv2.Value("false"))); out != in {
			t.Errorf("%s became %s, want unchanged", in, out)
		}
	}
	out := string(hideAttached([]byte(`{"targetInfo":{"targetId":"A","attached":true,"title":"t"},"x":1}`)))
	for _, want := range []string{`"attached":false`, `"targetId":"A"`, `"title":"t"`, `"x":1`} {
		if !strings.Contains(out, want) {
			t.Errorf("hideAttached = %s, lacks %s", out, want)
		}
	}
}

func TestNotWebRefusal(t *testing.T) {
	w := newWorld(t)
	if msg := w.iso.NotWebRefusal("/json/close", "A2"); !strings.HasPrefix(msg, "cdpguard: /json/close is refused: target A2 is not web content") {
		t.Errorf("NotWebRefusal = %q", msg)
	}
	if msg := w.iso.NotWebRefusal("/json/close", "A1"); msg != "" {
		t.Errorf("a web target refused: %q", msg)
	}
}

// TestListingLoneSurrogate: a page's title that Chrome writes with a lone
// UTF-16 surrogate (a string cut inside an emoji) does not make the target
// list unreadable, neither for the page's user nor for another user.
func TestListingLoneSurrogate(t *testing.T) {
	w := newWorld(t)
	reply := fmt.Sprintf(`{"targetInfos":[
		{"targetId":"A1","type":"page","title":"a\ud83d","url":"http://a.test/","attached":true,"browserContextId":%q},
		{"targetId":"B1","type":"page","title":"b\ud800c","url":"http://b.test/","attached":true,"browserContextId":%q}]}`,
		w.alice.Primary, w.bob.Primary)
	v := w.cmd(t, "Target.getTargets", `{}`)
	res, errRaw := v.OnReply([]byte(reply), nil)
	var got struct {
		TargetInfos []cdpmsg.TargetInfo `json:"targetInfos"`
	}
	if errRaw != nil || cdpmsg.UnmarshalBrowser(res, &got) != nil {
		t.Fatalf("reply %s %s", res, errRaw)
	}
	if len(got.TargetInfos) != 1 || got.TargetInfos[0].TargetID != "A1" {
		t.Errorf("getTargets filtered to %+v; want alice's A1", got.TargetInfos)
	}
}

// TestAttachedIsTheRelays: a target is shown attached to a connection
// exactly while the relay holds one of its sessions on it. Isolation kept
// its own count before, raised by both the attach's event and its reply
// and lowered by the detach once, so a target an agent attached with
// Target.attachToTarget and detached from stayed "attached" in its
// Target.getTargets for good.
func TestAttachedIsTheRelays(t *testing.T) {
	w := newWorld(t)
	listed := func() bool {
		t.Helper()
		v := w.cmd(t, "Target.getTargets", `{}`)
		res, _ := v.OnReply([]byte(fmt.Sprintf(`{"targetInfos":[{"targetId":"A1","type":"page","url":"http://a.test/","attached":true,"browserContextId":%q}]}`, w.alice.Primary)), nil)
		var got struct {
			TargetInfos []cdpmsg.TargetInfo `json:"targetInfos"`
		}
		if err := jsonv2.Unmarshal(res, &got); err != nil || len(got.TargetInfos) != 1 {
			t.Fatalf("getTargets reply %s: %v", res, err)
		}
		return got.TargetInfos[0].Attached
	}
	v := w.cmd(t, "Target.attachToTarget", `{"targetId":"A1","flatten":true}`)
	wantPassed(t, v)
	w.agent.on["SA1"] = "A1" // the relay records the attach's event
	if v.OnReply != nil {
		v.OnReply([]byte(`{"sessionId":"SA1"}`), nil)
	}
	if !listed() {
		t.Error("a target the connection holds a session to is listed unattached")
	}
	delete(w.agent.on, "SA1") // the relay ends the session at its detach
	if !w.iso.Event(w.conn, w.agent, event("Target.detachedFromTarget", "SA", `{"sessionId":"SA1","targetId":"A1"}`)) {
		t.Error("alice's own detach hidden")
	}
	if listed() {
		t.Error("a target the connection detached from is still listed attached")
	}
}
