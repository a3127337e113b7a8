package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

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
