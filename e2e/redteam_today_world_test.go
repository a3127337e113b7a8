package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// rtHiddenWorld: the reader's isolated world is never announced to agents;
// mallory guesses its execution context id (they are small integers) and
// tries to evaluate in it, to steer later reads of the page.
func rtHiddenWorld(t *testing.T, e *rtEnv) {
	m := e.mallory
	if _, err := rtGuardRead(m, e.malPage, nil); err != nil {
		t.Fatalf("Guard.read: %v", err)
	}
	announced := map[int64]bool{}
	for _, ev := range m.Events() {
		if ev.Method == "Runtime.executionContextCreated" && ev.SessionID == e.malPage {
			var p struct {
				Context struct {
					ID int64 `json:"id"`
				} `json:"context"`
			}
			_ = json.Unmarshal(ev.Params, &p)
			announced[p.Context.ID] = true
		}
	}
	reached := 0
	for id := int64(1); id <= 60; id++ {
		if announced[id] {
			continue
		}
		for _, c := range []struct {
			method string
			params any
		}{
			{"Runtime.evaluate", map[string]any{"expression": "document.title", "contextId": id, "returnByValue": true}},
			{"Runtime.callFunctionOn", map[string]any{"functionDeclaration": "function(){return document.title}", "executionContextId": id, "returnByValue": true}},
			{"Runtime.globalLexicalScopeNames", map[string]any{"executionContextId": id}},
			{"Runtime.evaluate", map[string]any{"expression": "document.title", "contextId": json.RawMessage(fmt.Sprintf("%d.0", id)), "returnByValue": true}},
			{"Runtime.evaluate", map[string]any{"expression": "document.title", "contextId": json.RawMessage(fmt.Sprintf("%de0", id)), "returnByValue": true}},
			{"DOM.resolveNode", map[string]any{"backendNodeId": 1, "executionContextId": id}},
			{"Runtime.evaluate", json.RawMessage(fmt.Sprintf(`{"expression":"document.title","returnByValue":true,"cont\u0065xtId":%d}`, id))},
			{"Runtime.evaluate", json.RawMessage(fmt.Sprintf(`{"expression":"document.title","returnByValue":true,"contextId":1,"contextId":%d}`, id))},
		} {
			res, err := m.CallWithin(e.malPage, c.method, c.params, 5*time.Second)
			if err == nil && !strings.Contains(string(res), "exceptionDetails") {
				reached++
				t.Errorf("mallory reached unannounced context %d with %s: %.200s", id, c.method, res)
			}
		}
	}
	// Replays: Runtime.enable again and Debugger.enable announce every
	// existing context and script; none of the guard's may show.
	n := len(m.Events())
	for _, c := range []string{"Runtime.disable", "Runtime.enable", "Debugger.enable"} {
		if _, err := m.CallWithin(e.malPage, c, nil, 10*time.Second); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
	if _, err := rtGuardRead(m, e.malPage, nil); err != nil {
		t.Errorf("Guard.read with Debugger enabled: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	for _, ev := range m.Events()[n:] {
		if ev.SessionID != e.malPage {
			continue
		}
		var p struct {
			Context struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"context"`
			ContextID int64 `json:"executionContextId"`
		}
		_ = json.Unmarshal(ev.Params, &p)
		switch ev.Method {
		case "Runtime.executionContextCreated":
			if strings.HasPrefix(p.Context.Name, "cdpguard") || !announced[p.Context.ID] && p.Context.ID > 0 && strings.Contains(string(ev.Params), `"isolated"`) {
				t.Errorf("replay shows a guard world: %s", ev.Params)
			}
		case "Debugger.scriptParsed":
			if !announced[p.ContextID] && strings.Contains(string(ev.Params), `"isolated"`) {
				t.Errorf("Debugger shows a script of an unannounced isolated world: %.300s", ev.Params)
			}
		}
	}
	_, _ = m.CallWithin(e.malPage, "Debugger.disable", nil, 10*time.Second)
	// Control: the page's own world answers.
	if got, err := m.Eval(e.malPage, "document.title"); err != nil || got == "" {
		t.Errorf("control: evaluate in the page's world: %q %v", got, err)
	}
	t.Logf("announced contexts %v; unannounced reached %d", announced, reached)
}

// rtRawWorld sends hand-written frames (a key spelt with a JSON escape,
// which Chrome decodes, and duplicate keys) that name the reader's world
// by a guessed context id, on a raw WebSocket as mallory.
func rtRawWorld(t *testing.T, e *rtEnv) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h := http.Header{userHeader: {"mallory"}}
	wsURL, err := cdptest.BrowserURL(ctx, e.base, h)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(64 << 20)
	id := 0
	send := func(frame string) (string, error) {
		id++
		if err := c.Write(ctx, websocket.MessageText, []byte(fmt.Sprintf(frame, id))); err != nil {
			return "", err
		}
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		for {
			_, b, err := c.Read(rctx)
			if err != nil {
				return "", err
			}
			var m struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal(b, &m) == nil && m.ID != nil && *m.ID == id {
				return string(b), nil
			}
		}
	}
	res, err := send(`{"id":%d,"method":"Target.attachToTarget","params":{"targetId":"` + e.malTarget + `","flatten":true}}`)
	var at struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if err != nil || json.Unmarshal([]byte(res), &at) != nil || at.Result.SessionID == "" {
		t.Fatalf("attach: %s %v", res, err)
	}
	s := at.Result.SessionID
	if res, err := send(`{"id":%d,"sessionId":"` + s + `","method":"Runtime.evaluate","params":{"expression":"window.__mainMark = 1"}}`); err != nil || strings.Contains(res, `"error"`) {
		t.Fatalf("mark the main world: %s %v", res, err)
	}
	if res, err := send(`{"id":%d,"sessionId":"` + s + `","method":"Guard.read","params":{}}`); err != nil || !strings.Contains(res, "user=mallory") {
		t.Fatalf("control: Guard.read: %.200s %v", res, err)
	}
	reached := 0
	for ctxID := 1; ctxID <= 30; ctxID++ {
		for _, f := range []string{
			`{"id":%%d,"sessionId":"%s","method":"Runtime.evaluate","params":{"expression":"typeof window.__mainMark","returnByValue":true,"cont\u0065xtId":%d}}`,
		} {
			res, err := send(fmt.Sprintf(f, s, ctxID))
			if err != nil {
				t.Fatalf("raw frame %s: %v", fmt.Sprintf(f, s, ctxID), err)
			}
			// The main world has __mainMark; any other world that answers
			// is one the agent was never told about.
			if strings.Contains(res, `"value":"undefined"`) {
				reached++
				t.Errorf("raw frame reached a world without the page's globals (context %d): %.200s", ctxID, res)
			}
		}
	}
	// Duplicate keys (Chrome would read the last): the relay refuses the
	// frame as malformed; whatever comes back is no evaluation result.
	for ctxID := 1; ctxID <= 6; ctxID++ {
		frame := fmt.Sprintf(`{"id":%d,"sessionId":"%s","method":"Runtime.evaluate","params":{"expression":"typeof window.__mainMark","returnByValue":true,"contextId":1,"contextId":%d}}`, 10000+ctxID, s, ctxID)
		if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		_, b, err := c.Read(rctx)
		rcancel()
		if err == nil && strings.Contains(string(b), `"result"`) {
			t.Errorf("a frame with duplicate keys was answered: %.200s", b)
		}
		if ctxID == 1 {
			t.Logf("duplicate keys: %.200s %v", b, err)
		}
	}
	t.Logf("worlds reached with raw frames: %d", reached)
}

// rtDebuggerWorld: a second connection of mallory's pauses her page in the
// debugger while the first reads it, and tries to run code in the reader's
// world through the paused call frames and their objects.
func rtDebuggerWorld(t *testing.T, e *rtEnv) {
	m := e.mallory
	if _, err := m.Eval(e.malPage, "window.__mainMark = 1"); err != nil {
		t.Fatal(err)
	}
	b := cdptest.Connect(t, e.base, "mallory")
	res, err := b.CallWithin("", "Target.attachToTarget", map[string]any{"targetId": e.malTarget, "flatten": true}, 10*time.Second)
	var at struct {
		SessionID string `json:"sessionId"`
	}
	if err != nil || json.Unmarshal(res, &at) != nil {
		t.Fatalf("second connection attach: %s %v", res, err)
	}
	bs := at.SessionID
	for _, c := range []string{"Runtime.enable", "Debugger.enable", "Debugger.pause"} {
		if _, err := b.CallWithin(bs, c, nil, 10*time.Second); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := rtGuardRead(m, e.malPage, nil)
		done <- err
	}()
	ev, ok := b.WaitEvent(10*time.Second, func(ev cdptest.Message) bool { return ev.Method == "Debugger.paused" && ev.SessionID == bs })
	if ok {
		var p struct {
			CallFrames []struct {
				CallFrameID string `json:"callFrameId"`
				This        struct {
					ObjectID string `json:"objectId"`
				} `json:"this"`
			} `json:"callFrames"`
		}
		_ = json.Unmarshal(ev.Params, &p)
		for _, f := range p.CallFrames {
			r1, err1 := b.CallWithin(bs, "Debugger.evaluateOnCallFrame", map[string]any{"callFrameId": f.CallFrameID, "expression": "typeof window.__mainMark", "returnByValue": true}, 5*time.Second)
			if err1 == nil && strings.Contains(string(r1), `"value":"undefined"`) {
				t.Errorf("evaluateOnCallFrame ran in a world without the page's globals: %.200s", r1)
			}
			refused(t, "evaluateOnCallFrame in the reader's paused script", err1, "isolated worlds")
			if f.This.ObjectID != "" {
				r2, err2 := b.CallWithin(bs, "Runtime.callFunctionOn", map[string]any{"objectId": f.This.ObjectID, "functionDeclaration": "function(){ return typeof window.__mainMark }", "returnByValue": true}, 5*time.Second)
				if err2 == nil && strings.Contains(string(r2), `"value":"undefined"`) {
					t.Errorf("callFunctionOn a paused frame's this ran in a world without the page's globals: %.200s", r2)
				}
				refused(t, "callFunctionOn the reader's this", err2, "isolated worlds")
			}
		}
		t.Logf("paused with %d frames: %.300s", len(p.CallFrames), ev.Params)
	} else {
		t.Errorf("the read never paused: the attack did not run")
	}
	_, _ = b.CallWithin(bs, "Debugger.resume", nil, 5*time.Second)
	_, _ = b.CallWithin(bs, "Debugger.disable", nil, 5*time.Second)
	select {
	case err := <-done:
		t.Logf("Guard.read while paused: %v", err)
	case <-time.After(40 * time.Second):
		t.Errorf("Guard.read did not end")
	}
}

// rtOldDocumentWorld: the refusal of the reader's context ids must not
// outlive the document they were made in. After a read and a cross-site
// navigation (a new renderer numbers its contexts from 1 again) every
// context of the new document is usable by id (the MCP tools'
// browser_evaluate hit this): the agent makes worlds of its own until their
// ids pass the reader's old one, and evaluates in each.
func rtOldDocumentWorld(t *testing.T, e *rtEnv) {
	m := e.mallory
	if _, err := rtGuardRead(m, e.malPage, nil); err != nil {
		t.Fatalf("Guard.read: %v", err)
	}
	m.Navigate(t, e.malPage, e.h.Sink.Origin()+testhosts.HitPath("rt-old-document"))
	res, err := m.CallWithin(e.malPage, "Page.getFrameTree", nil, 10*time.Second)
	if err != nil {
		t.Fatalf("Page.getFrameTree: %v", err)
	}
	var tree struct {
		FrameTree struct {
			Frame struct {
				ID string `json:"id"`
			} `json:"frame"`
		} `json:"frameTree"`
	}
	_ = json.Unmarshal(res, &tree)
	for i := range 12 {
		res, err := m.CallWithin(e.malPage, "Page.createIsolatedWorld", map[string]any{"frameId": tree.FrameTree.Frame.ID, "worldName": fmt.Sprintf("agent-world-%d", i)}, 10*time.Second)
		if err != nil {
			t.Fatalf("Page.createIsolatedWorld: %v", err)
		}
		var w struct {
			ID int64 `json:"executionContextId"`
		}
		_ = json.Unmarshal(res, &w)
		if _, err := m.CallWithin(e.malPage, "Runtime.evaluate", map[string]any{"expression": "1+1", "contextId": w.ID, "returnByValue": true}, 10*time.Second); err != nil {
			t.Errorf("the agent's own world (context %d) in a new document, after a read of the old one, was refused: %v", w.ID, err)
		}
	}
	m.Navigate(t, e.malPage, userURL(e.h, "mallory"))
}
