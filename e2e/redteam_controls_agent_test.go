package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/headed"
)

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
