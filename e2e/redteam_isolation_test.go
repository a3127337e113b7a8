package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// rtIsolation: mallory's browser session and the HTTP surface must never
// show or touch alice's tabs, cookies or context.
func rtIsolation(t *testing.T, e *rtEnv) {
	m := e.mallory
	t.Run("browserSessionListings", func(t *testing.T) {
		for _, c := range []struct {
			method string
			params any
		}{
			{"Target.getTargets", nil},
			{"Target.getBrowserContexts", nil},
			{"Storage.getCookies", nil},
			{"Target.getTargetInfo", nil},
			{"SystemInfo.getProcessInfo", nil},
			{"Browser.getWindowForTarget", map[string]any{"targetId": e.malTarget}},
		} {
			res, err := m.CallWithin("", c.method, c.params, 10*time.Second)
			t.Logf("%s: %v %.200s", c.method, err, res)
			e.noAlice(t, c.method, string(res))
		}
		res, _ := m.CallWithin(e.malPage, "Network.getAllCookies", nil, 10*time.Second)
		e.noAlice(t, "Network.getAllCookies on mallory's page", string(res))
		got, _ := m.Eval(e.malPage, `document.cookie + "|" + localStorage.getItem("k")`)
		e.noAlice(t, "mallory's page storage", got)
	})
	t.Run("foreignTargetRefused", func(t *testing.T) {
		for _, c := range []struct {
			session, method string
			params          map[string]any
		}{
			{"", "Target.attachToTarget", map[string]any{"targetId": e.aliceTarget, "flatten": true}},
			{"", "Target.attachToTarget", map[string]any{"targetId": e.aliceTarget, "flatten": false}},
			{e.malPage, "Target.attachToTarget", map[string]any{"targetId": e.aliceTarget, "flatten": true}},
			{"", "Target.closeTarget", map[string]any{"targetId": e.aliceTarget}},
			{"", "Target.activateTarget", map[string]any{"targetId": e.aliceTarget}},
			{"", "Target.getTargetInfo", map[string]any{"targetId": e.aliceTarget}},
			{"", "Target.detachFromTarget", map[string]any{"targetId": e.aliceTarget}},
			{"", "Target.sendMessageToTarget", map[string]any{"targetId": e.aliceTarget, "message": `{"id":1,"method":"Runtime.evaluate","params":{"expression":"document.cookie"}}`}},
			{"", "Browser.getWindowForTarget", map[string]any{"targetId": e.aliceTarget}},
			{"", "Target.autoAttachRelated", map[string]any{"targetId": e.aliceTarget, "waitForDebuggerOnStart": false}},
			{"", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": e.aliceCtx}},
			{"", "Storage.getCookies", map[string]any{"browserContextId": e.aliceCtx}},
			{"", "Storage.clearCookies", map[string]any{"browserContextId": e.aliceCtx}},
			{"", "Browser.setDownloadBehavior", map[string]any{"behavior": "deny", "browserContextId": e.aliceCtx}},
			{"", "Browser.grantPermissions", map[string]any{"permissions": []string{"geolocation"}, "browserContextId": e.aliceCtx}},
			{"", "Target.disposeBrowserContext", map[string]any{"browserContextId": e.aliceCtx}},
		} {
			_, err := m.CallWithin(c.session, c.method, c.params, 10*time.Second)
			refused(t, c.method+" on alice's", err, c.method)
		}
		e.aliceIntact(t)
	})
	t.Run("foreignSessionRefused", func(t *testing.T) {
		// alice's session id, as if guessed.
		for _, method := range []string{"Runtime.runIfWaitingForDebugger", "Runtime.evaluate", "Fetch.disable"} {
			_, err := m.CallWithin(e.aliceSession, method, map[string]any{"expression": "1"}, 10*time.Second)
			refused(t, method+" on alice's session", err, "not one of this connection's sessions")
		}
		_, err := m.CallWithin("", "Target.detachFromTarget", map[string]any{"sessionId": e.aliceSession}, 10*time.Second)
		refused(t, "Target.detachFromTarget alice's session", err, "Target.detachFromTarget")
		e.aliceIntact(t)
	})
	t.Run("autoAttachEverything", func(t *testing.T) {
		for i, filter := range [][]map[string]any{
			{{"type": "browser"}, {"type": "tab"}},
			{{"type": "browser"}, {"type": "page"}, {"type": "iframe"}, {"type": "worker"}, {"type": "service_worker"}, {"type": "shared_worker"}, {"type": "other"}},
		} {
			_, err := m.CallWithin("", "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true, "filter": filter}, 10*time.Second)
			t.Logf("setAutoAttach %v: %v", filter, err)
			_, _ = m.CallWithin("", "Target.setDiscoverTargets", map[string]any{"discover": true, "filter": []map[string]any{{}}}, 10*time.Second)
			// alice opens a new tab while mallory auto-attaches to everything.
			_, s2 := e.alice.OpenPage(t, userURL(e.h, "alice")+"&second="+strconv.Itoa(i))
			if got, err := e.alice.Eval(s2, `location.search`); err != nil || !strings.Contains(got, "second=") {
				t.Errorf("alice's new tab with mallory auto-attached: %q %v", got, err)
			}
			time.Sleep(300 * time.Millisecond)
			e.noAlice(t, "mallory's events", m.EventsText())
		}
		// Every browser or tab session mallory got: listings stay hers,
		// Fetch stays refused on browser sessions.
		events := m.Events()
		sessions := map[string]string{}
		for _, ev := range events {
			if ev.Method == "Target.attachedToTarget" {
				var a struct {
					SessionID  string `json:"sessionId"`
					TargetInfo struct {
						Type string `json:"type"`
					} `json:"targetInfo"`
				}
				_ = json.Unmarshal(ev.Params, &a)
				if a.TargetInfo.Type == "browser" || a.TargetInfo.Type == "tab" {
					sessions[a.SessionID] = a.TargetInfo.Type
				}
			}
		}
		for s, typ := range sessions {
			res, _ := m.CallWithin(s, "Target.getTargets", nil, 10*time.Second)
			e.noAlice(t, "Target.getTargets on an auto-attached "+typ+" session", string(res))
			res, _ = m.CallWithin(s, "Storage.getCookies", nil, 10*time.Second)
			e.noAlice(t, "Storage.getCookies on an auto-attached "+typ+" session", string(res))
			if typ == "browser" {
				_, err := m.CallWithin(s, "Fetch.disable", nil, 10*time.Second)
				refused(t, "Fetch.disable on an auto-attached browser session", err, "Fetch")
			}
		}
		_, _ = m.CallWithin("", "Target.setAutoAttach", map[string]any{"autoAttach": false, "waitForDebuggerOnStart": false}, 10*time.Second)
		_, _ = m.CallWithin("", "Target.setDiscoverTargets", map[string]any{"discover": false}, 10*time.Second)
	})
	t.Run("httpSurface", func(t *testing.T) {
		for _, user := range []string{"", "mallory"} {
			_, _, body := getList(t, e.base, user)
			e.noAlice(t, "/json/list as "+strconv.Quote(user), body)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for _, user := range []string{"mallory", ""} {
			ws := "ws" + strings.TrimPrefix(e.base, "http") + "/devtools/page/" + e.aliceTarget
			c, _, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{userHeader: {user}}})
			if err != nil {
				continue
			}
			_, _, err = c.Read(ctx)
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
				t.Errorf("/devtools/page/<alice's tab> as %q: %v, want a policy-violation close", user, err)
			}
			c.CloseNow()
		}
		if code, body := httpDo(t, http.MethodPut, e.base+"/json/close/"+e.aliceTarget, "mallory"); code == http.StatusOK {
			t.Errorf("mallory closing alice's tab over HTTP: %d %s", code, body)
		}
		e.aliceIntact(t)
	})
}

// rtPageSession: Chrome gives page sessions of a trusted client the full
// Target and Browser domains, so context-wide methods must be scoped there
// too, not only on browser-level sessions.
func rtPageSession(t *testing.T, e *rtEnv) {
	m, p := e.mallory, e.malPage
	t.Run("getTargets", func(t *testing.T) {
		res, err := m.CallWithin(p, "Target.getTargets", nil, 10*time.Second)
		t.Logf("Target.getTargets on a page session: %v", err)
		e.noAlice(t, "Target.getTargets on mallory's page session", string(res))
	})
	t.Run("createTargetInAlicesContext", func(t *testing.T) {
		res, err := m.CallWithin(p, "Target.createTarget", map[string]any{"url": userURL(e.h, "alice") + "&planted=mallory", "browserContextId": e.aliceCtx}, 10*time.Second)
		if err == nil {
			var ct struct {
				TargetID string `json:"targetId"`
			}
			_ = json.Unmarshal(res, &ct)
			t.Errorf("LEAK: mallory opened tab %s in alice's context from a page session", ct.TargetID)
			_, _ = e.alice.CallWithin("", "Target.closeTarget", map[string]any{"targetId": ct.TargetID}, 10*time.Second)
		}
	})
	t.Run("createTargetLandsInOwnContext", func(t *testing.T) {
		res, err := m.CallWithin(p, "Target.createTarget", map[string]any{"url": "about:blank#rt-own"}, 10*time.Second)
		var ct struct {
			TargetID string `json:"targetId"`
		}
		if err != nil || json.Unmarshal(res, &ct) != nil {
			return // refused: fine
		}
		list, _ := m.CallWithin("", "Target.getTargets", nil, 10*time.Second)
		if !strings.Contains(string(list), ct.TargetID) {
			t.Errorf("LEAK: a tab mallory created from a page session is outside her context (shared default context)")
		}
		_, _ = m.CallWithin(p, "Target.closeTarget", map[string]any{"targetId": ct.TargetID}, 10*time.Second)
	})
	t.Run("grantPermissionsInAlicesContext", func(t *testing.T) {
		_, err := m.CallWithin(p, "Browser.grantPermissions", map[string]any{"permissions": []string{"geolocation"}, "origin": e.h.Allowed.Origin(), "browserContextId": e.aliceCtx}, 10*time.Second)
		state, _ := e.alice.Eval(e.aliceSession, `navigator.permissions.query({name:"geolocation"}).then(s=>s.state)`)
		if err == nil || strings.Contains(state, "granted") {
			t.Errorf("LEAK: mallory granted geolocation in alice's context from a page session (err %v, alice sees %s)", err, state)
		}
		_, _ = e.alice.CallWithin("", "Browser.resetPermissions", nil, 10*time.Second)
	})
	t.Run("downloadBehaviorInAlicesContext", func(t *testing.T) {
		_, err := m.CallWithin(p, "Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "downloadPath": t.TempDir(), "browserContextId": e.aliceCtx}, 10*time.Second)
		if err == nil {
			t.Errorf("LEAK: mallory set alice's context's download behavior from a page session")
		}
	})
	t.Run("contextMethodsChromeRefuses", func(t *testing.T) {
		for _, c := range []struct {
			method string
			params map[string]any
		}{
			{"Target.getBrowserContexts", nil},
			{"Target.createBrowserContext", map[string]any{"proxyServer": "direct://"}},
			{"Target.disposeBrowserContext", map[string]any{"browserContextId": e.aliceCtx}},
			{"Storage.getCookies", map[string]any{"browserContextId": e.aliceCtx}},
			{"Storage.clearCookies", map[string]any{"browserContextId": e.aliceCtx}},
		} {
			res, err := m.CallWithin(p, c.method, c.params, 10*time.Second)
			failed(t, c.method+" on a page session", err)
			e.noAlice(t, c.method, string(res))
		}
		e.aliceIntact(t)
	})
	t.Run("attachToBrowserTargetFromPage", func(t *testing.T) {
		res, err := m.CallWithin(p, "Target.attachToBrowserTarget", nil, 10*time.Second)
		var at struct {
			SessionID string `json:"sessionId"`
		}
		if err != nil || json.Unmarshal(res, &at) != nil || at.SessionID == "" {
			t.Logf("attachToBrowserTarget from a page session: %v", err)
			return
		}
		_, err = m.CallWithin(at.SessionID, "Fetch.disable", nil, 10*time.Second)
		refused(t, "Fetch.disable on a browser session got from a page session", err, "Fetch")
		list, _ := m.CallWithin(at.SessionID, "Target.getTargets", nil, 10*time.Second)
		e.noAlice(t, "Target.getTargets on that session", string(list))
		_, _ = m.CallWithin("", "Target.detachFromTarget", map[string]any{"sessionId": at.SessionID}, 10*time.Second)
	})
}

// rtNonFlat: a non-flat session carries commands inside
// Target.sendMessageToTarget, where the firewall must still see them.
func rtNonFlat(t *testing.T, e *rtEnv) {
	m := e.mallory
	res, err := m.CallWithin("", "Target.createTarget", map[string]any{"url": "about:blank"}, 10*time.Second)
	var ct struct {
		TargetID string `json:"targetId"`
	}
	if err != nil || json.Unmarshal(res, &ct) != nil {
		t.Fatalf("createTarget: %v", err)
	}
	defer m.CallWithin("", "Target.closeTarget", map[string]any{"targetId": ct.TargetID}, 10*time.Second)
	res, err = m.CallWithin("", "Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": false}, 10*time.Second)
	var at struct {
		SessionID string `json:"sessionId"`
	}
	if err != nil || json.Unmarshal(res, &at) != nil {
		t.Logf("non-flat attach refused: %v", err)
		return
	}
	// inner sends a command through the non-flat session. ok is false when
	// the guard refused Target.sendMessageToTarget itself: the attack ends
	// there.
	inner := func(t *testing.T, id int, method string, params map[string]any) bool {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
		_, err := m.CallWithin("", "Target.sendMessageToTarget", map[string]any{"sessionId": at.SessionID, "message": string(b)}, 10*time.Second)
		var re *cdptest.Error
		if errors.As(err, &re) && strings.Contains(re.Message, "cdpguard") {
			t.Logf("refused: %v", err)
			return false
		}
		return true
	}
	answer := func(id int) string {
		got, _ := m.WaitEvent(3*time.Second, func(ev cdptest.Message) bool {
			return ev.Method == "Target.receivedMessageFromTarget" && strings.Contains(string(ev.Params), `\"id\":`+strconv.Itoa(id)+`,`)
		})
		var msg struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(got.Params, &msg)
		return msg.Message
	}
	t.Run("fileInput", func(t *testing.T) {
		if !inner(t, 10, "Runtime.evaluate", map[string]any{"expression": `document.body.appendChild(Object.assign(document.createElement("input"), {type: "file", id: "f"}))`}) {
			return
		}
		var ev struct {
			Result struct {
				Result struct {
					ObjectID string `json:"objectId"`
				} `json:"result"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(answer(10)), &ev); err != nil || ev.Result.Result.ObjectID == "" {
			t.Fatalf("no file input: %v", err)
		}
		sent := inner(t, 11, "DOM.setFileInputFiles", map[string]any{"files": []string{"/etc/passwd"}, "objectId": ev.Result.Result.ObjectID})
		_ = inner(t, 12, "Runtime.evaluate", map[string]any{"expression": `(async () => { const f = document.getElementById("f").files[0]; return f ? await f.text() : "no file" })()`, "awaitPromise": true})
		if got := answer(12); strings.Contains(got, "root:") {
			t.Errorf("LEAK: /etc/passwd uploaded and read through Target.sendMessageToTarget (inner DOM.setFileInputFiles sent: %v): %.120s", sent, got)
		}
	})
	t.Run("fileNavigation", func(t *testing.T) {
		if !inner(t, 1, "Page.navigate", map[string]any{"url": "file:///etc/passwd"}) {
			return
		}
		time.Sleep(time.Second)
		_ = inner(t, 2, "Runtime.evaluate", map[string]any{"expression": "document.body && document.body.innerText"})
		got, _ := m.WaitEvent(3*time.Second, func(ev cdptest.Message) bool {
			return ev.Method == "Target.receivedMessageFromTarget" && strings.Contains(string(ev.Params), `\"id\":2`)
		})
		if strings.Contains(string(got.Params), "root:") {
			t.Errorf("LEAK: file:///etc/passwd read through Target.sendMessageToTarget: %.200s", got.Params)
		} else {
			t.Logf("inner Page.navigate file: passed the firewall; the Fetch judge answered it: %.120s", got.Params)
		}
	})
	t.Run("innerGetTargets", func(t *testing.T) {
		if !inner(t, 3, "Target.getTargets", nil) {
			return
		}
		got, _ := m.WaitEvent(3*time.Second, func(ev cdptest.Message) bool {
			return ev.Method == "Target.receivedMessageFromTarget" && strings.Contains(string(ev.Params), `\"id\":3`)
		})
		e.noAlice(t, "Target.getTargets through sendMessageToTarget", string(got.Params))
	})
	t.Run("innerEvilNavigation", func(t *testing.T) {
		_ = inner(t, 4, "Page.navigate", map[string]any{"url": e.evil("nonflat")})
		e.noLeak(t)
	})
}
