// Red-team regression tests for the surfaces built on 2026-12-01: Guard.read,
// GET /read, the MCP server, window ids and dialog grace. One guard is
// shared by every subtest; alice is the victim, mallory the attacker.

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// todayGrace is the dialog grace of the shared guard: short, so that the
// I4 attack is quick.
const todayGrace = 700 * time.Millisecond

// TestRedTeamToday attacks Guard.read, GET /read, /mcp, window ids and the
// dialog grace as a hostile agent, page and MCP client would.
func TestRedTeamToday(t *testing.T) {
	needBrowser(t)
	h := testhosts.Start(t)
	g := userGuard(t, func(c *cdpguard.Config) {
		c.DialogGrace = todayGrace
		c.ReadLoadTimeout = 3 * time.Second
	})
	e := &rtEnv{h: h, base: g.URL()}
	e.alice = cdptest.Connect(t, e.base, "alice")
	e.aliceTarget, e.aliceSession = e.alice.OpenPage(t, userURL(h, "alice"))
	e.aliceCtx = e.alice.ContextOf(t, e.aliceTarget)
	e.mallory = cdptest.Connect(t, e.base, "mallory")
	e.malTarget, e.malPage = e.mallory.OpenPage(t, userURL(h, "mallory"))

	t.Run("readURLs", func(t *testing.T) { rtReadURLs(t, e) })
	t.Run("readScope", func(t *testing.T) { rtReadScope(t, e) })
	t.Run("hiddenWorld", func(t *testing.T) { rtHiddenWorld(t, e) })
	t.Run("rawWorld", func(t *testing.T) { rtRawWorld(t, e) })
	t.Run("debuggerWorld", func(t *testing.T) { rtDebuggerWorld(t, e) })
	t.Run("oldDocumentWorld", func(t *testing.T) { rtOldDocumentWorld(t, e) })
	t.Run("aboutURLs", func(t *testing.T) { rtAboutURLs(t, e) })
	t.Run("readConcurrent", func(t *testing.T) { rtReadConcurrent(t, e) })
	t.Run("readHTTP", func(t *testing.T) { rtReadHTTP(t, e) })
	t.Run("windows", func(t *testing.T) { rtWindows(t, e) })
	t.Run("dialogGrace", func(t *testing.T) { rtDialogGrace(t, e) })
	t.Run("mcp", func(t *testing.T) { rtMCP(t, e) })
	t.Run("giantReply", func(t *testing.T) { rtGiantReply(t, e) })
	e.noLeak(t)
	e.aliceIntact(t)
}

// rtGuardRead sends Guard.read on session of c and decodes the result.
func rtGuardRead(c *cdptest.Client, session string, params map[string]any) (cdpguard.ReadResult, error) {
	var out cdpguard.ReadResult
	res, err := c.CallWithin(session, "Guard.read", params, 40*time.Second)
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(res, &out)
	return out, err
}

// rtReadURLs: Guard.read with URLs the policy or the scheme rules forbid,
// directly, through a redirect, and from a data: page's own scripts.
func rtReadURLs(t *testing.T, e *rtEnv) {
	m := e.mallory
	for _, c := range []struct{ name, url, rule string }{
		{"forbidden host", e.evil("read-direct"), "evil.test"},
		{"forbidden IP spelling", "http://0x7f000001:" + fmt.Sprint(e.h.Forbidden.Port) + testhosts.HitPath("rt-read-ip"), "non-canonical IPv4"},
		{"file", "file:///etc/passwd", `scheme "file"`},
		{"chrome", "chrome://version/", `scheme "chrome"`},
		{"javascript", "javascript:fetch('" + e.evil("read-js") + "')", `scheme "javascript"`},
		{"view-source", "view-source:" + e.evil("read-vs"), `scheme "view-source"`},
		{"userinfo trick", "http://allowed.test@evil.test:" + fmt.Sprint(e.h.Forbidden.Port) + testhosts.HitPath("rt-read-userinfo"), "evil.test"},
	} {
		_, err := rtGuardRead(m, e.malPage, map[string]any{"url": c.url})
		refused(t, "Guard.read "+c.name, err, c.rule)
	}
	// A redirect from the allowed host to the forbidden one: the hop is
	// blocked, the read shows the explanation page.
	r, err := rtGuardRead(m, e.malPage, map[string]any{"url": e.h.PageURL("/redirect?to=" + url.QueryEscape(e.evil("read-redirect")))})
	if err != nil {
		t.Errorf("Guard.read of a redirect to a forbidden host: %v", err)
	} else if strings.Contains(r.Text, testhosts.ForbiddenBody) {
		t.Errorf("LEAK: the read shows the forbidden host's page: %.300s", r.Text)
	}
	// A data: page whose scripts reach out while the guard reads it.
	page := `<title>data</title><p>data page text for the reader, long enough to count as main content of this little page.</p>` +
		`<img src="` + e.evil("read-data-img") + `"><script>fetch("` + e.evil("read-data-fetch") + `").catch(()=>{});` +
		`try{new WebSocket("ws://evil.test:` + fmt.Sprint(e.h.Forbidden.Port) + `/rt-read-ws")}catch(e){};` +
		`location.href="` + e.evil("read-data-nav") + `"</script>`
	if _, err := rtGuardRead(m, e.malPage, map[string]any{"url": "data:text/html," + url.PathEscape(page)}); err != nil {
		t.Logf("Guard.read of a hostile data: page: %v", err)
	}
	// The guard's own endpoint under an allowed name (allowed.test maps to
	// 127.0.0.1, any port is allowed): a browser-initiated navigation sends
	// no Origin and Sec-Fetch-Site: none, so only the Host check and the
	// proxy's refusal to dial the endpoint stand between it and alice.
	gu, _ := url.Parse(e.base)
	for _, p := range []string{"/json/list", "/json/version", "/read?url=" + url.QueryEscape(userURL(e.h, "alice"))} {
		u := "http://" + testhosts.AllowedName + ":" + gu.Port() + p
		r, err := rtGuardRead(m, e.malPage, map[string]any{"url": u})
		e.noAlice(t, "Guard.read of the endpoint "+p, r.Text)
		if strings.Contains(r.Text, "webSocketDebuggerUrl") || strings.Contains(r.Text, "Browser") && strings.Contains(r.Text, "Protocol-Version") {
			t.Errorf("LEAK: Guard.read reached the guard's endpoint %s: %.300s", p, r.Text)
		}
		t.Logf("Guard.read %s: %v %.120q", p, err, r.Text)
	}
	// A page with a huge title (it could make the reader's reply larger
	// than the browser connection's message limit): the title is cut.
	r, err = rtGuardRead(m, e.malPage, map[string]any{"url": "data:text/html," + url.PathEscape(`<p>some text for the reader to find here, enough of it to count as the main content.</p><script>document.title = "t".repeat(1e5)</script>`)})
	if err != nil || len(r.Title) > 4096 {
		t.Errorf("Guard.read of a page with a 100 kB title: title %d chars, %v", len(r.Title), err)
	}
	// A negative offset and a huge maxChars are answered, not obeyed.
	_, err = rtGuardRead(m, e.malPage, map[string]any{"offset": -5})
	failed(t, "Guard.read offset -5", err)
	_, err = rtGuardRead(m, e.malPage, map[string]any{"maxChars": 1 << 62})
	if err != nil {
		t.Logf("Guard.read maxChars 2^62: %v", err)
	}
	_, err = rtGuardRead(m, e.malPage, map[string]any{"url": 42})
	failed(t, "Guard.read url 42", err)
	e.noLeak(t)
	// Control: the same method reaches an allowed listener.
	ctl := e.h.Sink.Origin() + testhosts.HitPath("rt-read-control")
	if _, err := rtGuardRead(m, e.malPage, map[string]any{"url": ctl}); err != nil {
		t.Errorf("control read of %s: %v", ctl, err)
	}
	if e.h.Sink.Hits(testhosts.HitPath("rt-read-control")) == 0 {
		t.Errorf("control: the sink saw no read")
	}
	m.Navigate(t, e.malPage, userURL(e.h, "mallory"))
}

// rtReadScope: Guard.read on sessions that are not the agent's own page:
// the browser session, alice's page session (as if leaked), a worker
// session of mallory's own page, and a page connection to alice's target.
func rtReadScope(t *testing.T, e *rtEnv) {
	m := e.mallory
	_, err := rtGuardRead(m, "", map[string]any{"url": userURL(e.h, "alice")})
	refused(t, "Guard.read on the browser session", err, "page session")
	_, err = rtGuardRead(m, e.aliceSession, nil)
	failed(t, "Guard.read on alice's session", err)
	_, err = rtGuardRead(m, e.malPage, map[string]any{"targetId": e.aliceTarget})
	if err != nil {
		t.Errorf("Guard.read on her own page with alice's targetId as an extra param: %v", err)
	}
	// Guard.read on a page connection (/devtools/page/<id>, commands
	// without a sessionId): her own tab reads; alice's tab is no connection.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pageWS := "ws" + strings.TrimPrefix(e.base, "http") + "/devtools/page/"
	own, err := cdptest.Dial(ctx, pageWS+e.malTarget, cdptest.Options{Header: http.Header{userHeader: {"mallory"}}})
	if err != nil {
		t.Fatalf("control: page connection to her own tab: %v", err)
	}
	res, err := own.Call(ctx, "", "Guard.read", nil)
	if err != nil || !strings.Contains(string(res), "user=mallory") {
		t.Errorf("control: Guard.read on her own page connection: %.200s %v", res, err)
	}
	own.Close()
	if c, err := cdptest.Dial(ctx, pageWS+e.aliceTarget, cdptest.Options{Header: http.Header{userHeader: {"mallory"}}}); err == nil {
		res, err := c.Call(ctx, "", "Guard.read", nil)
		e.noAlice(t, "Guard.read on a page connection to alice's tab", string(res))
		if err == nil {
			t.Errorf("Guard.read on a page connection to alice's tab answered: %.200s", res)
		}
		c.Close()
	}
	// A worker of mallory's own page.
	if _, err := m.CallWithin(e.malPage, "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true}, 10*time.Second); err != nil {
		t.Fatalf("auto-attach on her page: %v", err)
	}
	if _, err := m.Eval(e.malPage, `window.__w = new Worker(URL.createObjectURL(new Blob(["setInterval(()=>{},1000)"]))); 1`); err != nil {
		t.Fatalf("worker: %v", err)
	}
	ev, ok := m.WaitEvent(10*time.Second, func(e cdptest.Message) bool {
		return e.Method == "Target.attachedToTarget" && strings.Contains(string(e.Params), `"type":"worker"`)
	})
	if !ok {
		t.Fatalf("no worker session")
	}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(ev.Params, &at)
	_, err = rtGuardRead(m, at.SessionID, map[string]any{"url": userURL(e.h, "mallory")})
	refused(t, "Guard.read on a worker session", err, "worker")
	_, _ = m.CallWithin(e.malPage, "Target.setAutoAttach", map[string]any{"autoAttach": false, "waitForDebuggerOnStart": false, "flatten": true}, 10*time.Second)
	e.aliceIntact(t)
}

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

// rtReadConcurrent: many concurrent reads from mallory on her page, while
// alice reads hers; both answered, nothing crosses.
func rtReadConcurrent(t *testing.T, e *rtEnv) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := userURL(e.h, "mallory") + fmt.Sprintf("&c=%d", i)
			if i%2 == 1 {
				u = e.evil(fmt.Sprintf("read-conc-%d", i))
			}
			_, err := rtGuardRead(e.mallory, e.malPage, map[string]any{"url": u})
			if i%2 == 0 && err != nil {
				errs <- fmt.Errorf("mallory read %d: %w", i, err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := rtGuardRead(e.alice, e.aliceSession, nil)
		if err != nil || !strings.Contains(r.URL, "user=alice") {
			errs <- fmt.Errorf("alice's read during mallory's flood: %+v %v", r.URL, err)
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	e.noLeak(t)
}

// rtReadHTTP: GET /read from web pages (Origin, Sec-Fetch-Site), foreign
// Hosts, forbidden URLs, and user mix-ups.
func rtReadHTTP(t *testing.T, e *rtEnv) {
	get := func(u string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		for k, v := range hdr {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil || b.Len() > 1<<20 {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	e.h.Sink.Reset()
	ctl := e.h.Sink.Origin() + testhosts.HitPath("rt-readhttp-control")
	rd := func(u string) string { return e.base + "/read?url=" + url.QueryEscape(u) }
	for _, c := range []struct {
		name string
		url  string
		hdr  map[string]string
	}{
		{"Origin", rd(ctl + "?o"), map[string]string{userHeader: "mallory", "Origin": "http://evil.test"}},
		{"Sec-Fetch-Site", rd(ctl + "?s"), map[string]string{userHeader: "mallory", "Sec-Fetch-Site": "cross-site"}},
		{"Host rebinding", rd(ctl + "?h"), map[string]string{userHeader: "mallory", "Host": "evil.test:9222"}},
		{"Host rebinding, allowed name", rd(ctl + "?a"), map[string]string{userHeader: "mallory", "Host": "allowed.test"}},
	} {
		if code, body := get(c.url, c.hdr); code < 400 {
			t.Errorf("/read with %s: %d %.200s", c.name, code, body)
		}
	}
	if n := e.h.Sink.Total(); n > 0 {
		t.Errorf("a refused /read reached the sink: %v", e.h.Sink.Log())
	}
	for _, u := range []string{e.evil("readhttp"), "file:///etc/passwd", e.h.PageURL("/redirect?to=" + url.QueryEscape(e.evil("readhttp-redirect")))} {
		code, body := get(rd(u), map[string]string{userHeader: "mallory"})
		if strings.Contains(body, testhosts.ForbiddenBody) || strings.Contains(body, "root:x:0") {
			t.Errorf("LEAK: /read %s: %d %.300s", u, code, body)
		}
	}
	e.noLeak(t)
	// Control.
	if code, body := get(rd(ctl), map[string]string{userHeader: "mallory"}); code != 200 || e.h.Sink.Hits(testhosts.HitPath("rt-readhttp-control")) == 0 {
		t.Errorf("control /read: %d %.200s, sink hits %d", code, body, e.h.Sink.Hits(testhosts.HitPath("rt-readhttp-control")))
	}
	// Alice's reader tab must not show in mallory's listings, and
	// mallory's /read must not read alice's tab.
	if code, body := get(rd(userURL(e.h, "alice")+"&reader=alice"), map[string]string{userHeader: "alice"}); code != 200 {
		t.Fatalf("alice /read: %d %s", code, body)
	}
	_, _, list := getList(t, e.base, "mallory")
	e.noAlice(t, "mallory's /json/list after alice's /read", list)
	res, _ := e.mallory.CallWithin("", "Target.getTargets", nil, 10*time.Second)
	e.noAlice(t, "mallory's Target.getTargets after alice's /read", string(res))
	e.noAlice(t, "mallory's events after alice's /read", e.mallory.EventsText())
}

// rtWindows: window ids are small integers; mallory names every window
// that is not hers.
func rtWindows(t *testing.T, e *rtEnv) {
	m := e.mallory
	res, err := m.CallWithin("", "Browser.getWindowForTarget", map[string]any{"targetId": e.malTarget}, 10*time.Second)
	var own struct {
		WindowID int64 `json:"windowId"`
	}
	if err != nil || json.Unmarshal(res, &own) != nil {
		t.Fatalf("control: her own window: %s %v", res, err)
	}
	res, err = e.alice.CallWithin("", "Browser.getWindowForTarget", map[string]any{"targetId": e.aliceTarget}, 10*time.Second)
	var alices struct {
		WindowID int64 `json:"windowId"`
	}
	if err != nil || json.Unmarshal(res, &alices) != nil {
		t.Fatalf("alice's window: %s %v", res, err)
	}
	_, err = m.CallWithin("", "Browser.getWindowForTarget", map[string]any{"targetId": e.aliceTarget}, 10*time.Second)
	failed(t, "getWindowForTarget(alice's target)", err)
	for id := int64(0); id <= 40; id++ {
		if id == own.WindowID {
			continue
		}
		for _, c := range []struct {
			method string
			params map[string]any
		}{
			{"Browser.getWindowBounds", map[string]any{"windowId": id}},
			{"Browser.setWindowBounds", map[string]any{"windowId": id, "bounds": map[string]any{"windowState": "minimized"}}},
			{"Browser.setContentsSize", map[string]any{"windowId": id, "width": 100, "height": 100}},
		} {
			for _, s := range []string{"", e.malPage} {
				_, err := m.CallWithin(s, c.method, c.params, 5*time.Second)
				if err == nil {
					t.Errorf("%s window %d on session %q (alice's is %d): answered", c.method, id, s, alices.WindowID)
				}
			}
		}
	}
	if _, err := m.CallWithin("", "Browser.getWindowBounds", map[string]any{"windowId": own.WindowID}, 5*time.Second); err != nil {
		t.Errorf("control: her own window's bounds: %v", err)
	}
}

// rtDialogGrace: mallory opens dialogs in a loop on her page and never
// answers (I4: the guard answers after the grace); she answers alice's
// dialog (refused: not her session); alice's dialog is alice's.
func rtDialogGrace(t *testing.T, e *rtEnv) {
	m := e.mallory
	start := time.Now()
	got, err := m.Eval(e.malPage, `(() => { for (let i = 0; i < 3; i++) alert("loop " + i); return confirm("last") })()`)
	took := time.Since(start)
	if err != nil || got != "false" {
		t.Errorf("mallory's dialog loop: %q %v", got, err)
	}
	if took > todayGrace+3*time.Second { // a loop waits one grace at most
		t.Errorf("I4: four unanswered dialogs held the page %v (grace %v)", took, todayGrace)
	}
	// Alice's page opens a dialog; mallory answers it on alice's session.
	_, _ = e.alice.CallWithin(e.aliceSession, "Runtime.evaluate", map[string]any{"expression": `setTimeout(() => { window.__ans = confirm("alice?") }, 0); 1`}, 5*time.Second)
	if _, ok := e.alice.WaitEvent(5*time.Second, func(ev cdptest.Message) bool {
		return ev.Method == "Page.javascriptDialogOpening" && ev.SessionID == e.aliceSession
	}); !ok {
		t.Fatalf("alice saw no dialog")
	}
	_, err = m.CallWithin(e.aliceSession, "Page.handleJavaScriptDialog", map[string]any{"accept": true}, 5*time.Second)
	failed(t, "mallory answering alice's dialog", err)
	if _, err := e.alice.CallWithin(e.aliceSession, "Page.handleJavaScriptDialog", map[string]any{"accept": false}, 5*time.Second); err != nil {
		t.Logf("alice's own answer: %v (the grace may have passed)", err)
	}
	if v, err := e.alice.Eval(e.aliceSession, "window.__ans"); err != nil || v != "false" {
		t.Errorf("alice's dialog result: %q %v (want false: mallory's accept must not count)", v, err)
	}
}

// rtMCP: a hostile MCP client (the Go SDK's) as mallory.
func rtMCP(t *testing.T, e *rtEnv) {
	s := mcpConnect(t, e.base, "mallory")
	call(t, s, "browser_navigate", map[string]any{"url": userURL(e.h, "mallory-mcp")}, false)
	ws := "ws://evil.test:" + fmt.Sprint(e.h.Forbidden.Port)
	for _, fn := range []string{
		`() => { window.open("` + e.evil("mcp-open") + `"); return 1 }`,
		`() => { location.href = "file:///etc/passwd"; return 1 }`,
		`() => fetch("` + e.evil("mcp-fetch") + `").then(() => "sent", (e) => "failed")`,
		`() => { new Worker(URL.createObjectURL(new Blob(['fetch("` + e.evil("mcp-worker") + `").catch(()=>{}); try { new WebSocket("` + ws + `/mcp-worker-ws") } catch (e) {}']))); return 1 }`,
		`() => { try { new WebSocket("` + ws + `/mcp-ws") } catch (e) {} return 1 }`,
		`() => navigator.sendBeacon("` + e.evil("mcp-beacon") + `")`,
		`() => { const f = document.createElement("iframe"); f.src = "` + e.evil("mcp-iframe") + `"; document.body.append(f); return 1 }`,
		`() => new Promise(r => setTimeout(() => r(1), 800))`,
	} {
		call(t, s, "browser_evaluate", map[string]any{"function": fn}, false)
	}
	out := call(t, s, "browser_read", map[string]any{"url": e.evil("mcp-read")}, true)
	mustContain(t, "browser_read of a forbidden URL", out, "evil.test")
	call(t, s, "browser_navigate", map[string]any{"url": "file:///etc/passwd"}, true)
	call(t, s, "browser_navigate", map[string]any{"url": e.h.PageURL("/redirect?to=" + url.QueryEscape(e.evil("mcp-redirect")))}, true)
	e.noLeak(t)
	// Tabs: index games never reach alice's tabs.
	list := call(t, s, "browser_tabs", map[string]any{"action": "list"}, false)
	e.noAlice(t, "mallory's browser_tabs", list)
	if strings.Contains(list, "file:") || strings.Contains(list, "chrome:") {
		t.Errorf("LEAK: a tab left web content: %s", list)
	}
	call(t, s, "browser_file_upload", map[string]any{"element": "x", "ref": "e1", "paths": []string{"/etc/passwd"}}, true)
	for _, idx := range []int{-1, 99, 1 << 40} {
		call(t, s, "browser_tabs", map[string]any{"action": "select", "index": idx}, true)
		call(t, s, "browser_tabs", map[string]any{"action": "close", "index": idx}, true)
	}
	// A ref of alice's snapshot used by mallory.
	a := mcpConnect(t, e.base, "alice")
	call(t, a, "browser_navigate", map[string]any{"url": userURL(e.h, "alice") + "&mcp=1"}, false)
	snap := call(t, a, "browser_snapshot", nil, false)
	ref := refOf(t, snap, "open popup")
	call(t, s, "browser_click", map[string]any{"element": "alice's button", "ref": ref}, true)
	// Alice's Mcp-Session-Id with mallory's header: the header is the
	// user, so the call drives mallory's browser, never alice's.
	body := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"browser_tabs","arguments":{"action":"list"}}}`
	req, _ := http.NewRequest(http.MethodPost, e.base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", a.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set(userHeader, "mallory")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		var b strings.Builder
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		e.noAlice(t, "alice's MCP session with mallory's header", b.String())
		t.Logf("alice's session id with mallory's header: %d %.200s", resp.StatusCode, b.String())
	}
	// Giant arguments.
	call(t, s, "browser_evaluate", map[string]any{"function": "() => '" + strings.Repeat("x", 70<<10) + "'"}, true)
	call(t, s, "browser_navigate", map[string]any{"url": e.h.PageURL("/?" + strings.Repeat("a", 9<<10))}, true)
	// After browser_close, the next call starts afresh.
	call(t, s, "browser_close", nil, false)
	list = call(t, s, "browser_tabs", map[string]any{"action": "list"}, false)
	e.noAlice(t, "mallory's tabs after browser_close", list)
	// A flood of calls at once: one user's calls run one after another.
	var wg sync.WaitGroup
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{"action": "new"}})
		}()
	}
	wg.Wait()
	// alice's MCP browser is untouched.
	got := call(t, a, "browser_evaluate", map[string]any{"function": "() => location.search"}, false)
	mustContain(t, "alice's MCP page after mallory's attacks", got, "user=alice")
	// Control: browser_evaluate's fetch reaches an allowed listener.
	call(t, a, "browser_evaluate", map[string]any{"function": `() => fetch("` + e.h.Sink.Origin() + testhosts.HitPath("rt-mcp-control") + `").then(r => r.status)`}, false)
	if e.h.Sink.Hits(testhosts.HitPath("rt-mcp-control")) == 0 {
		t.Errorf("control: browser_evaluate's fetch did not reach the sink")
	}
	// A 5 MB argument: the server answers 413 (the Go SDK client then
	// closes its session); other users' sessions go on.
	big := mcpConnect(t, e.base, "mallory")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	_, err := big.CallTool(ctx, &mcp.CallToolParams{Name: "browser_type", Arguments: map[string]any{"element": "x", "ref": "e1", "text": strings.Repeat("y", 5<<20)}})
	cancel()
	if err == nil || !strings.Contains(err.Error(), "Too Large") {
		t.Errorf("5 MB argument: %v, want 413", err)
	}
	call(t, a, "browser_tabs", map[string]any{"action": "list"}, false)
	// DNS rebinding and web pages against /mcp.
	for _, hd := range []map[string]string{{"Host": "evil.test"}, {"Origin": "http://evil.test"}, {"Sec-Fetch-Site": "cross-site"}} {
		req, _ := http.NewRequest(http.MethodPost, e.base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(userHeader, "mallory")
		for k, v := range hd {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("/mcp with %v: %v", hd, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("/mcp with %v: %d, want a refusal", hd, resp.StatusCode)
		}
	}
}

// rtGiantReply: mallory's page logs a 257 MB string while she has Runtime
// enabled: an event over the guard's 256 MB browser-message limit. Before
// the fix a page alone ended the browser connection of every user this
// way (an agent too, with Runtime.evaluate of such a string by value). The
// pipe now skips it: an event is dropped, an answer becomes a CDP error
// naming the limit (internal/browser TestPipeConnOversize: one 257 MB
// message is enough CI time here); nobody is cut off.
func rtGiantReply(t *testing.T, e *rtEnv) {
	// mallory's MCP browser_close closed her tabs: a fresh one.
	e.malTarget, e.malPage = e.mallory.OpenPage(t, userURL(e.h, "mallory"))
	if _, err := e.mallory.CallWithin(e.malPage, "Runtime.evaluate", map[string]any{"expression": `console.log("x".repeat(257 * 1024 * 1024)), 1`}, 60*time.Second); err != nil {
		t.Errorf("a page's 257 MB console message: %v", err)
	}
	e.aliceIntact(t)
	if _, err := e.mallory.Eval(e.malPage, "1+1"); err != nil {
		t.Errorf("mallory's connection after the giant message: %v", err)
	}
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

// rtAboutURLs: about: is allowed (it never touches the network), but Chrome
// rewrites some about: URLs to its WebUI (about:version → chrome://version).
func rtAboutURLs(t *testing.T, e *rtEnv) {
	m := e.mallory
	for _, u := range []string{"about:version", "about:settings"} {
		r, err := rtGuardRead(m, e.malPage, map[string]any{"url": u})
		if err == nil && (strings.Contains(r.URL, "chrome:") || strings.Contains(r.Text, "Command Line") || strings.Contains(r.Text, "--remote-debugging")) {
			t.Errorf("LEAK: Guard.read %s reached WebUI: %s %.300s", u, r.URL, r.Text)
		}
		t.Logf("Guard.read %s: %v %s %.100q", u, err, r.URL, r.Text)
		res, err := m.CallWithin(e.malPage, "Page.navigate", map[string]any{"url": u}, 10*time.Second)
		t.Logf("Page.navigate %s: %s %v", u, res, err)
		time.Sleep(300 * time.Millisecond)
		res, err = m.CallWithin("", "Target.getTargetInfo", map[string]any{"targetId": e.malTarget}, 10*time.Second)
		if strings.Contains(string(res), "chrome:") {
			t.Errorf("LEAK: Page.navigate %s left her tab at WebUI: %s", u, res)
		}
		t.Logf("her tab: %.200s %v", res, err)
		res, err = m.CallWithin("", "Target.createTarget", map[string]any{"url": u}, 10*time.Second)
		var ct struct {
			TargetID string `json:"targetId"`
		}
		if err == nil && json.Unmarshal(res, &ct) == nil {
			time.Sleep(300 * time.Millisecond)
			info, _ := m.CallWithin("", "Target.getTargetInfo", map[string]any{"targetId": ct.TargetID}, 10*time.Second)
			if strings.Contains(string(info), "chrome:") {
				t.Errorf("LEAK: Target.createTarget %s made a WebUI tab she can see: %s", u, info)
			}
			if at, err := m.CallWithin("", "Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, 10*time.Second); err == nil {
				var a struct {
					SessionID string `json:"sessionId"`
				}
				_ = json.Unmarshal(at, &a)
				if v, err := m.Eval(a.SessionID, "location.href + ' ' + document.body.innerText.slice(0, 200)"); err == nil && strings.Contains(v, "chrome:") {
					t.Errorf("LEAK: evaluate in a tab made with %s: %s", u, v)
				}
			}
			_, _ = m.CallWithin("", "Target.closeTarget", map[string]any{"targetId": ct.TargetID}, 10*time.Second)
			t.Logf("Target.createTarget %s: %.200s", u, info)
		} else {
			t.Logf("Target.createTarget %s: %v", u, err)
		}
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
