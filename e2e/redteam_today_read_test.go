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

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

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
