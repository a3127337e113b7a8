package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// ctlEnv is the scene of the controls tests: a browser the test started
// (attach mode), a direct connection to it that acts as the human, and the
// guard attached to it with controls on.
type ctlEnv struct {
	h     *testhosts.Hosts
	g     *cdpguard.Guard
	human *cdptest.Client // straight to Chrome, never through the guard
	alice *cdptest.Client
	bob   *cdptest.Client
}

func setupControls(t *testing.T) *ctlEnv {
	t.Helper()
	if directMode() {
		t.Skip("the controls are the guard's; nothing to check against a plain Chromium")
	}
	needBrowser(t)
	e := &ctlEnv{h: testhosts.Start(t)}
	c := startChromium(t)
	openTabHTTP(t, c.URL, preexistingURL(e.h)) // the human's own tab, open before the guard came
	cfg := guardConfig(t)
	cfg.Controls = true
	cfg.DialogGrace = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := cdpguard.Attach(ctx, c.URL, cfg)
	if err != nil {
		t.Fatalf("cdpguard.Attach: %v", err)
	}
	cdptest.CloseOnCleanup(t, g)
	cdptest.WaitHTTP(t, g.URL()+"/readyz", "ok", 30*time.Second)
	e.g = g
	e.human = cdptest.Connect(t, c.URL, "")
	e.alice = cdptest.Connect(t, g.URL(), "alice")
	e.bob = cdptest.Connect(t, g.URL(), "bob")
	return e
}

// humanSession attaches the human's direct connection to a target.
func (e *ctlEnv) humanSession(t *testing.T, targetID string) string {
	t.Helper()
	res, err := e.human.CallWithin("", "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, 10*time.Second)
	if err != nil {
		t.Fatalf("human attach: %v", err)
	}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &at)
	return at.SessionID
}

// domNode is DOM.getDocument's node, as much as the tests read.
type domNode struct {
	NodeID      int64     `json:"nodeId"`
	NodeName    string    `json:"nodeName"`
	NodeValue   string    `json:"nodeValue"`
	Attributes  []string  `json:"attributes"`
	Children    []domNode `json:"children"`
	ShadowRoots []domNode `json:"shadowRoots"`
	ContentDoc  *domNode  `json:"contentDocument"`
}

// find returns the first node under n (shadow roots and frames included)
// for which ok is true, and whether it lies inside the controls' host.
func (n *domNode) find(ok func(*domNode) bool) *domNode {
	if ok(n) {
		return n
	}
	for _, list := range [][]domNode{n.ShadowRoots, n.Children} {
		for i := range list {
			if f := list[i].find(ok); f != nil {
				return f
			}
		}
	}
	if n.ContentDoc != nil {
		return n.ContentDoc.find(ok)
	}
	return nil
}

func (n *domNode) text() string {
	var b strings.Builder
	var walk func(*domNode)
	walk = func(m *domNode) {
		if m.NodeName == "#text" {
			b.WriteString(m.NodeValue)
		}
		for i := range m.ShadowRoots {
			walk(&m.ShadowRoots[i])
		}
		for i := range m.Children {
			walk(&m.Children[i])
		}
	}
	walk(n)
	return b.String()
}

// document returns the whole DOM of a session's page, closed shadow roots
// and frames included.
func document(t *testing.T, c *cdptest.Client, session string) *domNode {
	t.Helper()
	res, err := c.CallWithin(session, "DOM.getDocument", map[string]any{"depth": -1, "pierce": true}, 10*time.Second)
	if err != nil {
		t.Fatalf("DOM.getDocument: %v", err)
	}
	var d struct {
		Root domNode `json:"root"`
	}
	if err := json.Unmarshal(res, &d); err != nil {
		t.Fatal(err)
	}
	return &d.Root
}

func isNamed(name string) func(*domNode) bool {
	return func(n *domNode) bool { return strings.EqualFold(n.NodeName, name) }
}

// waitNode polls the page's DOM until find succeeds or d passes.
func waitNode(t *testing.T, c *cdptest.Client, session string, d time.Duration, ok func(*domNode) bool) *domNode {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if n := document(t, c, session).find(ok); n != nil {
			return n
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// allowButton finds the "Allow" button in the controls' closed shadow root.
func allowButton(n *domNode) bool {
	return strings.EqualFold(n.NodeName, "button") && strings.HasPrefix(n.text(), "Allow ")
}

// center returns the middle of the box of the node find matches. The
// controls redraw as the guard pushes state, so a node id can go stale
// between the look-up and DOM.getBoxModel: find again, for up to 5 s.
func center(t *testing.T, c *cdptest.Client, session string, find func(*domNode) bool) (float64, float64) {
	t.Helper()
	x, y, ok := tryCenter(t, c, session, find, 5*time.Second)
	if !ok {
		t.Fatalf("no box for the node within 5 s")
	}
	return x, y
}

// tryCenter is center that reports a node not found within d (0: one look).
func tryCenter(t *testing.T, c *cdptest.Client, session string, find func(*domNode) bool, d time.Duration) (float64, float64, bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if n := document(t, c, session).find(find); n != nil {
			res, err := c.CallWithin(session, "DOM.getBoxModel", map[string]any{"nodeId": n.NodeID}, 10*time.Second)
			if err == nil {
				var bm struct {
					Model struct {
						Content []float64 `json:"content"`
					} `json:"model"`
				}
				if json.Unmarshal(res, &bm) != nil || len(bm.Model.Content) != 8 {
					t.Fatalf("box model: %s", res)
				}
				q := bm.Model.Content
				return (q[0] + q[4]) / 2, (q[1] + q[5]) / 2, true
			}
			if !strings.Contains(err.Error(), "Could not find node") {
				t.Fatalf("DOM.getBoxModel: %v", err)
			}
		}
		if !time.Now().Before(deadline) {
			return 0, 0, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// click sends a real left click at (x, y) on session.
func click(c *cdptest.Client, session string, x, y float64) error {
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		p := map[string]any{"type": typ, "x": x, "y": y}
		if typ != "mouseMoved" {
			p["button"], p["clickCount"] = "left", 1
		}
		if _, err := c.CallWithin(session, "Input.dispatchMouseEvent", p, 10*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// policyFor returns GET /policy as user.
func policyFor(t *testing.T, base, user string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/policy", nil)
	req.Header.Set(userHeader, user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("/policy: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b)
}

// TestControls runs the controls end to end in attach mode, headless: the
// badge, its invisibility to agents, every forgery, then a human's grant.
func TestControls(t *testing.T) {
	t.Parallel() // own browser, guard and test hosts: runs beside the other heavy suites (CI wall time)
	e := setupControls(t)
	evil := func(name string) string { return e.h.Forbidden.Origin() + testhosts.HitPath("ctl-"+name) }

	aTarget, aSession := e.alice.OpenPage(t, userURL(e.h, "alice"))
	hs := e.humanSession(t, aTarget)

	t.Run("badge", func(t *testing.T) {
		host := waitNode(t, e.human, hs, 10*time.Second, isNamed("cdpguard-controls"))
		if host == nil {
			t.Fatalf("no controls host element on the allowed page")
		}
		if got := host.text(); !strings.Contains(got, "cdpguard active") {
			t.Errorf("badge text %q", got)
		}
		if a := strings.Join(host.Attributes, " "); !strings.Contains(a, "aria-hidden true") {
			t.Errorf("host attributes %q lack aria-hidden", a)
		}
		// A page script sees the host element, but not into its closed
		// shadow root, and no binding on its own global.
		got, err := e.alice.Eval(aSession, `(() => { const h = document.querySelector('cdpguard-controls'); return [String(!!h), String(h && h.shadowRoot), Object.keys(window).filter(k => k.startsWith('cdpguard')).join(',')].join('|'); })()`)
		if err != nil || got != `"true|null|"` {
			t.Errorf("page's view of the controls: %s %v", got, err)
		}
	})

	t.Run("preexisting tab and dialog", func(t *testing.T) { e.preexisting(t) })

	t.Run("hidden from agents", func(t *testing.T) {
		if ev := e.alice.EventsText(); strings.Contains(ev, "cdpguard_") {
			t.Errorf("LEAK: an agent saw a guard world or binding: %.500s", ev)
		}
		res, err := e.alice.CallWithin(aSession, "Page.getFrameTree", nil, 10*time.Second)
		if err != nil || strings.Contains(string(res), "cdpguard") {
			t.Errorf("frame tree shows the guard: %s %v", res, err)
		}
	})

	// The human learns the real world and binding names (the direct
	// connection sees everything), so the agent can be made to try them.
	world, binding := e.realNames(t, hs)

	// The explanation page with its button, for alice.
	e.alice.Navigate(t, aSession, evil("alice"))
	btn := waitNode(t, e.human, hs, 10*time.Second, allowButton)
	if btn == nil {
		t.Fatalf("no Allow button on the explanation page:\n%s", document(t, e.human, hs).text())
	}
	if got := btn.text(); got != "Allow "+testhosts.ForbiddenName+" for this session" {
		t.Errorf("button label %q", got)
	}
	time.Sleep(700 * time.Millisecond) // the button arms after 600 ms

	t.Run("forgery", func(t *testing.T) {
		e.forgeries(t, aTarget, aSession, hs, world, binding)
		if n := e.h.Forbidden.Total(); n > 0 {
			t.Errorf("LEAK: the forbidden listener saw %d requests: %v", n, e.h.Forbidden.Log())
		}
		if s := policyFor(t, e.g.URL(), "alice"); strings.Contains(s, testhosts.ForbiddenName) {
			t.Errorf("a forgery granted the host: %s", s)
		}
	})

	t.Run("snapshots", func(t *testing.T) { e.snapshotsHide(t, evil) })

	t.Run("grant", func(t *testing.T) {
		e.humanGrant(t, aTarget, aSession, hs, evil)
	})
}

// realNames returns the controls world's name and the binding's, as only
// a direct connection to the browser can learn them.
func (e *ctlEnv) realNames(t *testing.T, hs string) (world, binding string) {
	t.Helper()
	if _, err := e.human.CallWithin(hs, "Runtime.enable", nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ev, ok := e.human.WaitEvent(5*time.Second, func(m cdptest.Message) bool {
		return m.SessionID == hs && m.Method == "Runtime.executionContextCreated" && strings.Contains(string(m.Params), "cdpguard_controls_")
	})
	if !ok {
		t.Fatalf("the human sees no controls world")
	}
	var p struct {
		Context struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"context"`
	}
	_ = json.Unmarshal(ev.Params, &p)
	res, err := e.human.CallWithin(hs, "Runtime.evaluate", map[string]any{"contextId": p.Context.ID, "returnByValue": true,
		"expression": `Object.getOwnPropertyNames(globalThis).filter(k => k.startsWith('cdpguard_')).join(',')`}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	_ = json.Unmarshal(res, &v)
	if v.Result.Value == "" || strings.Contains(v.Result.Value, ",") {
		t.Fatalf("binding in the controls world: %q", v.Result.Value)
	}
	if _, err := e.human.CallWithin(hs, "Runtime.disable", nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	return p.Context.Name, v.Result.Value
}

// forgeries tries every way an agent or a page could get the host granted
// without a human; each must leave it blocked.
func (e *ctlEnv) forgeries(t *testing.T, aTarget, aSession, hs, world, binding string) {
	btn := waitNode(t, e.human, hs, 5*time.Second, allowButton)
	if btn == nil {
		t.Fatal("no Allow button")
	}
	x, y := center(t, e.human, hs, allowButton)

	// Every context the agent was told of.
	var ctxs []int64
	for _, line := range strings.Split(e.alice.EventsText(), "\n") {
		if strings.Contains(line, "Runtime.executionContextCreated") {
			var p struct {
				Context struct {
					ID int64 `json:"id"`
				} `json:"context"`
			}
			if i := strings.Index(line, "{"); i >= 0 && json.Unmarshal([]byte(line[i:]), &p) == nil {
				ctxs = append(ctxs, p.Context.ID)
			}
		}
	}
	for _, id := range append(ctxs, 1, 2, 3, 4, 5, 6, 7, 8) {
		res, err := e.alice.CallWithin(aSession, "Runtime.evaluate", map[string]any{"contextId": id, "returnByValue": true, "userGesture": true,
			"expression": fmt.Sprintf(`(() => { const names = ['%s', 'cdpguard', 'cdpguardControls', 'binding']; let called = []; for (const n of names) { if (typeof globalThis[n] === 'function') { try { globalThis[n](JSON.stringify({action:'allow', trusted:true, active:true, armed:true, visible:true})); called.push(n); } catch (_) {} } } if (globalThis.cdpguardControls) called.push('controls'); return called.join(','); })()`, binding)}, 5*time.Second)
		if err == nil && strings.Contains(string(res), `"value":"`) && !strings.Contains(string(res), `"value":""`) {
			t.Errorf("LEAK: context %d let the agent reach the controls: %s", id, res)
		}
	}

	// Page script (here the agent's, in the page's own world) overrides
	// the same names: the controls' world has its own globals, and the
	// human's grant below still goes through.
	if _, err := e.alice.Eval(aSession, fmt.Sprintf(`window[%q] = () => 'page'; window.cdpguardControls = { update() { return 'page'; } }; 1`, binding)); err != nil {
		t.Errorf("override: %v", err)
	}

	refusedCmd := func(what, method string, params map[string]any) {
		_, err := e.alice.CallWithin(aSession, method, params, 5*time.Second)
		refused(t, what, err, "cdpguard_")
	}
	refusedCmd("addBinding with the real name", "Runtime.addBinding", map[string]any{"name": binding})
	refusedCmd("addBinding with a guessed name", "Runtime.addBinding", map[string]any{"name": "cdpguard_0123456789abcdef01234567"})
	refusedCmd("addBinding into the controls world", "Runtime.addBinding", map[string]any{"name": "x", "executionContextName": world})
	refusedCmd("createIsolatedWorld with the world's name", "Page.createIsolatedWorld", map[string]any{"frameId": aTarget, "worldName": world})
	refusedCmd("addScriptToEvaluateOnNewDocument in the world", "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": "1", "worldName": world})

	// The agent reaches the real button through the DOM domain and clicks
	// it from script, with a user gesture.
	doc := document(t, e.alice, aSession)
	if b := doc.find(allowButton); b == nil {
		t.Errorf("the agent's DOM.getDocument(pierce) does not show the button; the synthetic click is not tried")
	} else {
		res, err := e.alice.CallWithin(aSession, "DOM.resolveNode", map[string]any{"nodeId": b.NodeID}, 5*time.Second)
		var r struct {
			Object struct {
				ObjectID string `json:"objectId"`
			} `json:"object"`
		}
		if err == nil && json.Unmarshal(res, &r) == nil && r.Object.ObjectID != "" {
			if _, err := e.alice.CallWithin(aSession, "Runtime.callFunctionOn", map[string]any{"objectId": r.Object.ObjectID, "userGesture": true,
				"functionDeclaration": `function () { this.disabled = false; this.click(); this.dispatchEvent(new MouseEvent('click', {bubbles: true})); }`}, 5*time.Second); err != nil {
				t.Errorf("synthetic click: %v", err)
			}
		} else {
			t.Errorf("resolve the button: %s %v", res, err)
		}
		e.wantNote(t, hs, "not a trusted input event")
	}

	e.debuggerForgery(t, aSession, hs)

	// A fake button the agent adds to the page's own DOM, clicked by the
	// human for real: the page's world has no binding to call.
	if _, err := e.alice.Eval(aSession, `(() => { const b = document.createElement('button'); b.id = 'fake'; b.textContent = 'Allow evil.test for this session'; b.style.cssText = 'position:fixed;left:10px;top:10px;width:200px;height:40px'; b.onclick = () => { for (const k of Object.keys(window)) if (typeof window[k] === 'function' && k.startsWith('cdpguard')) window[k]('{}'); }; document.documentElement.appendChild(b); return 1; })()`); err != nil {
		t.Errorf("fake button: %v", err)
	}
	time.Sleep(1100 * time.Millisecond) // past the agent-input window: this click is the human's
	if err := click(e.human, hs, 110, 30); err != nil {
		t.Errorf("human click on the fake button: %v", err)
	}

	// The agent's own trusted input on the real button (where it is now:
	// the refusal note moved it).
	if b := waitNode(t, e.human, hs, 5*time.Second, allowButton); b != nil {
		x, y = center(t, e.human, hs, allowButton)
	}
	if err := click(e.alice, aSession, x, y); err != nil {
		t.Errorf("agent click: %v", err)
	}
	e.wantNote(t, hs, "agent")

	// The agent rewrites the button's text through the DOM domain, and the
	// human clicks what now reads as something else.
	if b := document(t, e.alice, aSession).find(allowButton); b == nil || len(b.Children) == 0 {
		t.Errorf("the agent does not see the button's text node")
	} else if _, err := e.alice.CallWithin(aSession, "DOM.setNodeValue", map[string]any{"nodeId": b.Children[0].NodeID, "value": "Close this notice"}, 5*time.Second); err != nil {
		t.Errorf("DOM.setNodeValue: %v", err)
	} else {
		time.Sleep(1100 * time.Millisecond)
		rewritten := func(n *domNode) bool { return isNamed("button")(n) && n.text() == "Close this notice" }
		rx, ry, ok := tryCenter(t, e.human, hs, rewritten, 0)
		if !ok {
			// The controls drew themselves afresh (js/controls.js): the
			// button names the host again and must arm again.
			if document(t, e.human, hs).find(allowButton) == nil {
				t.Errorf("the rewritten button is gone and no Allow button is back")
			}
		} else {
			x, y = rx, ry
			if err := click(e.human, hs, x, y); err != nil {
				t.Errorf("human click: %v", err)
			}
			e.wantNote(t, hs, "text was changed")
		}
	}

	// A page on an allowed host frames the explanation page and opens it
	// in a popup: the frame gets no page, no button; the popup's DOM is
	// another origin's.
	bTarget, bSession := e.bob.OpenPage(t, e.h.PageURL("/page.html")+"?user=bob-frame")
	_ = bTarget
	if _, err := e.bob.Eval(bSession, fmt.Sprintf(`new Promise(r => { const f = document.createElement('iframe'); f.src = %q; f.onload = () => r(1); f.onerror = () => r(2); document.body.appendChild(f); setTimeout(() => r(3), 3000); })`, e.h.Forbidden.Origin()+testhosts.HitPath("ctl-frame"))); err != nil {
		t.Errorf("iframe: %v", err)
	}
	bh := e.humanSession(t, bTarget)
	if n := document(t, e.human, bh).find(allowButton); n != nil {
		t.Errorf("an Allow button in a framed page: %s", n.text())
	}
	got, err := e.bob.Eval(bSession, fmt.Sprintf(`new Promise(r => { const w = window.open(%q); setTimeout(() => { try { r('read:' + w.document.body.innerHTML); } catch (err) { r('refused:' + err.name); } }, 1500); })`, e.h.Forbidden.Origin()+testhosts.HitPath("ctl-popup")))
	if err != nil || !strings.Contains(got, "refused:") {
		t.Errorf("a page read the popup explanation page: %s %v", got, err)
	}
}

// wantNote waits for the badge to show a refusal containing what.
func (e *ctlEnv) wantNote(t *testing.T, hs, what string) {
	t.Helper()
	n := waitNode(t, e.human, hs, 5*time.Second, func(n *domNode) bool {
		return isNamed("cdpguard-controls")(n) && strings.Contains(n.text(), "Not allowed") && strings.Contains(n.text(), what)
	})
	if n == nil {
		t.Errorf("the badge does not say the grant was refused (%q): %s", what, document(t, e.human, hs).find(isNamed("cdpguard-controls")).text())
	}
}

// humanGrant clicks Allow as the human and checks the grant: alice reaches
// the host, bob does not.
func (e *ctlEnv) humanGrant(t *testing.T, aTarget, aSession, hs string, evil func(string) string) {
	t.Helper()
	btn := waitNode(t, e.human, hs, 5*time.Second, allowButton)
	if btn == nil {
		t.Fatal("no Allow button for the human")
	}
	x, y := center(t, e.human, hs, allowButton)
	time.Sleep(1100 * time.Millisecond) // past the last agent input
	if err := click(e.human, hs, x, y); err != nil {
		t.Fatalf("human click: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.h.Forbidden.WaitHits(ctx, testhosts.HitPath("ctl-alice"), 1); err != nil {
		host := document(t, e.human, hs).find(isNamed("cdpguard-controls"))
		if host != nil && strings.Contains(host.text(), "grants are not built yet") {
			t.Skip("the grants lane is not merged: grantHost is a stub")
		}
		t.Fatalf("after the human's click the blocked page was not loaded from the host: %v; badge: %v", err, host)
	}
	if s := policyFor(t, e.g.URL(), "alice"); !strings.Contains(s, testhosts.ForbiddenName) {
		t.Errorf("alice's /policy does not show the grant: %s", s)
	}
	if s := policyFor(t, e.g.URL(), "bob"); strings.Contains(s, testhosts.ForbiddenName) {
		t.Errorf("bob's /policy shows alice's grant: %s", s)
	}
	for who, c := range map[string]*cdptest.Client{"alice": e.alice, "bob": e.bob} {
		res, err := c.CallWithin("", "Guard.getPolicy", nil, 5*time.Second)
		if has := strings.Contains(string(res), testhosts.ForbiddenName); err != nil || has != (who == "alice") {
			t.Errorf("Guard.getPolicy for %s: %s %v (want the grant only for alice)", who, res, err)
		}
	}
	// A second tab of alice's reaches the host; bob's gets the explanation
	// page and the listener sees nothing of his.
	e.alice.OpenPage(t, evil("alice-2"))
	_, bs := e.bob.OpenPage(t, evil("bob"))
	time.Sleep(300 * time.Millisecond)
	if n := e.h.Forbidden.Hits(testhosts.HitPath("ctl-alice-2")); n == 0 {
		t.Errorf("alice's second tab did not reach the granted host")
	}
	if n := e.h.Forbidden.Hits(testhosts.HitPath("ctl-bob")); n > 0 {
		t.Errorf("LEAK: alice's grant let bob reach the host (%d hits)", n)
	}
	if got, err := e.bob.Eval(bs, `document.title`); err != nil || !strings.Contains(got, "Blocked by cdpguard") {
		t.Errorf("bob's tab: %s %v, want the explanation page", got, err)
	}
}

// snapshotsHide checks that the badge and its panel, drawn on an
// explanation page, are in neither Playwright's ariaSnapshot nor the MCP
// server's browser_snapshot, while the human sees them on the same tab.
func (e *ctlEnv) snapshotsHide(t *testing.T, evil func(string) string) {
	node := needNode(t)
	pwURL := evil("playwright")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients/controls.mjs")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "CDPGUARD_URL="+e.g.URL(), "CDPGUARD_USER=carol", "PAGE_URL="+pwURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res struct {
		Aria  string `json:"aria"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil || res.Error != "" || res.Aria == "" {
		t.Fatalf("controls.mjs: %v %s %v\n%s", err, res.Error, runErr, stderr.String())
	}
	e.badgeOn(t, pwURL, allowButton)
	for _, s := range []string{"cdpguard active", "for this session", "Blocked on this page"} {
		if strings.Contains(res.Aria, s) {
			t.Errorf("Playwright's ariaSnapshot shows the controls (%q):\n%s", s, res.Aria)
		}
	}

	// browser_navigate refuses a blocked host before the browser sees it:
	// the badge on an allowed page, opened to show its panel.
	mcpURL := userURL(e.h, "dave")
	s := mcpConnect(t, e.g.URL(), "dave")
	call(t, s, "browser_navigate", map[string]any{"url": mcpURL}, false)
	e.badgeOn(t, mcpURL, func(n *domNode) bool {
		return isNamed("cdpguard-controls")(n) && strings.Contains(n.text(), "cdpguard active")
	})
	snap := call(t, s, "browser_snapshot", nil, false)
	if !strings.Contains(snap, "allowed-page-marker") {
		t.Errorf("browser_snapshot is not of the allowed page:\n%s", snap)
	}
	for _, s := range []string{"cdpguard active", "for this session", "Blocked on this page"} {
		if strings.Contains(snap, s) {
			t.Errorf("browser_snapshot shows the controls (%q):\n%s", s, snap)
		}
	}
}

// badgeOn checks, as the human, that the tab at u shows the controls.
func (e *ctlEnv) badgeOn(t *testing.T, u string, ok func(*domNode) bool) {
	t.Helper()
	res, err := e.human.CallWithin("", "Target.getTargets", nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			URL      string `json:"url"`
		} `json:"targetInfos"`
	}
	_ = json.Unmarshal(res, &r)
	for _, ti := range r.TargetInfos {
		if ti.URL == u {
			if waitNode(t, e.human, e.humanSession(t, ti.TargetID), 5*time.Second, ok) == nil {
				t.Errorf("the human sees no controls on %s, so the snapshot check proves nothing", u)
			}
			return
		}
	}
	t.Errorf("no tab at %s", u)
}

func preexistingURL(h *testhosts.Hosts) string { return userURL(h, "human-before-attach") }

// preexisting checks the human's tab that was open before the guard
// attached: it gets the badge, and a dialog there waits --dialog-grace for
// the human before the guard declines it, which the badge then says.
func (e *ctlEnv) preexisting(t *testing.T) {
	res, err := e.human.CallWithin("", "Target.getTargets", nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			URL      string `json:"url"`
		} `json:"targetInfos"`
	}
	_ = json.Unmarshal(res, &r)
	var hs string
	for _, ti := range r.TargetInfos {
		if ti.URL == preexistingURL(e.h) {
			hs = e.humanSession(t, ti.TargetID)
		}
	}
	if hs == "" {
		t.Fatalf("the pre-existing tab is gone")
	}
	if waitNode(t, e.human, hs, 5*time.Second, isNamed("cdpguard-controls")) == nil {
		t.Fatalf("no badge on the tab that was open before the guard attached")
	}
	if _, err := e.human.CallWithin(hs, "Page.enable", nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := e.human.CallWithin(hs, "Runtime.evaluate", map[string]any{"expression": `setTimeout(() => confirm('cdpguard e2e: a question for the human'), 0); 1`}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.human.WaitEvent(5*time.Second, func(m cdptest.Message) bool { return m.SessionID == hs && m.Method == "Page.javascriptDialogOpening" }); !ok {
		t.Fatalf("no dialog opened")
	}
	time.Sleep(500 * time.Millisecond)
	if _, ok := e.human.WaitEvent(0, func(m cdptest.Message) bool { return m.SessionID == hs && m.Method == "Page.javascriptDialogClosed" }); ok {
		t.Errorf("the guard answered the dialog at once; a human gets --dialog-grace (1 s here)")
	}
	if _, ok := e.human.WaitEvent(5*time.Second, func(m cdptest.Message) bool { return m.SessionID == hs && m.Method == "Page.javascriptDialogClosed" }); !ok {
		t.Fatalf("the guard did not answer the dialog after the grace")
	}
	if waitNode(t, e.human, hs, 5*time.Second, func(n *domNode) bool {
		return isNamed("cdpguard-controls")(n) && strings.Contains(n.text(), "declined this page's confirm dialog")
	}) == nil {
		t.Errorf("the badge does not say the guard declined the dialog: %s", document(t, e.human, hs).find(isNamed("cdpguard-controls")).text())
	}
}

// debuggerForgery: an agent with the debugger on reads script sources by
// guessed ids, and sets a breakpoint whose condition runs in the controls
// world (conditions run in the paused frame) and calls the binding with a
// forged report; a declined dialog makes the world render, which hits it.
func (e *ctlEnv) debuggerForgery(t *testing.T, aSession, hs string) {
	src, err := os.ReadFile("../js/controls.js")
	if err != nil {
		t.Fatal(err)
	}
	line := -1
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "badge.textContent = 'cdpguard active") {
			line = i
		}
	}
	if line < 0 {
		t.Fatal("no render line in js/controls.js")
	}
	if _, err := e.alice.CallWithin(aSession, "Debugger.enable", nil, 10*time.Second); err != nil {
		t.Fatalf("Debugger.enable: %v", err)
	}
	defer func() {
		if _, err := e.alice.CallWithin(aSession, "Debugger.disable", nil, 10*time.Second); err != nil {
			t.Errorf("Debugger.disable: %v", err)
		}
	}()
	for id := 1; id <= 40; id++ { // a page's first scripts: the controls' is among them
		res, err := e.alice.CallWithin(aSession, "Debugger.getScriptSource", map[string]any{"scriptId": fmt.Sprint(id)}, 5*time.Second)
		if err == nil && (strings.Contains(string(res), "trackVisibility") || strings.Contains(string(res), "const c = globalThis.cdpguardControls")) {
			t.Errorf("LEAK: Debugger.getScriptSource(%d) returned the controls' script", id)
		}
	}
	forged := `(globalThis[state.binding] && globalThis[state.binding]('{"action":"allow","trusted":true,"active":true,"armed":true,"visible":true,"label":"Allow evil.test for this session"}'), false)`
	// The script has no URL, but its hash (SHA-256 of the source, which is
	// public) names it.
	sum := sha256.Sum256(src)
	_, err = e.alice.CallWithin(aSession, "Debugger.setBreakpointByUrl", map[string]any{"scriptHash": hex.EncodeToString(sum[:]), "lineNumber": line, "condition": forged}, 5*time.Second)
	var re *cdptest.Error
	switch {
	case errors.As(err, &re) && strings.Contains(re.Message, "cdpguard"):
		t.Logf("the guard refused the conditional breakpoint itself: %s", re.Message)
	case err != nil:
		t.Fatalf("setBreakpointByUrl: %v", err)
	default:
		if _, err := e.alice.Eval(aSession, `setTimeout(() => alert('make the controls render'), 0); 1`); err != nil {
			t.Fatalf("alert: %v", err)
		}
		e.wantNote(t, hs, "debugger")
	}
	// Whatever the breakpoint did: while the agent's debugger is on, not
	// even a human's click counts (a plain breakpoint and
	// Debugger.setReturnValue could have changed what the world saw). Had
	// it counted, the host would be granted: the forgery test's end checks
	// the listener and /policy.
	time.Sleep(1100 * time.Millisecond)
	if b := waitNode(t, e.human, hs, 5*time.Second, allowButton); b == nil {
		t.Errorf("no Allow button for the human")
	} else {
		x, y := center(t, e.human, hs, allowButton)
		if err := click(e.human, hs, x, y); err != nil {
			t.Errorf("human click: %v", err)
		}
		e.wantNote(t, hs, "debugger")
	}
}
