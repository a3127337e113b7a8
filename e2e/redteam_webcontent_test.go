package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// webSchemes are the URL schemes of web content, as the guard defines it.
func isWebURL(u string) bool {
	for _, p := range []string{"http:", "https:", "about:", "data:", "blob:"} {
		if strings.HasPrefix(u, p) {
			return true
		}
	}
	return u == ""
}

// nonWebMarks are strings that must never show in what an agent sees.
var nonWebMarks = []string{"chrome://", "chrome-untrusted://", "devtools://", "chrome-extension://", "chrome-search://", `"browser_ui"`, `"webview"`}

func noNonWeb(t *testing.T, what, text string) {
	t.Helper()
	for _, m := range nonWebMarks {
		if strings.Contains(text, m) {
			t.Errorf("%s shows %s: %.400s", what, m, text)
		}
	}
}

// rtWebContent is issue 15's attack: mallory lists targets, tries to attach
// to, activate and close every target that is not web content (ids learned
// from the guard's own view, i.e. what Chrome told the guard), opens a
// second browser session with discovery and auto-attach on everything, and
// creates chrome:// tabs. Each is refused or hidden, and no evaluate ever
// runs outside web content.
func rtWebContent(t *testing.T, e *rtEnv) {
	// A fresh connection: earlier attacks left hers with auto-attach state.
	m := cdptest.Connect(t, e.base, "mallory")
	malTarget, malPage := m.OpenPage(t, userURL(e.h, "mallory")+"&web=0")
	// A second tab of mallory's, so that Chrome creates what it creates for
	// a user's tabs (the issue saw browser_ui omnibox popups).
	_, s2 := m.OpenPage(t, userURL(e.h, "mallory")+"&web=1")
	time.Sleep(500 * time.Millisecond)
	seen := e.rec.seenTargets()
	types := map[string]bool{}
	var nonWeb []recordedTarget
	dup := map[string]bool{}
	for _, tg := range seen {
		types[tg.typ+" "+strings.SplitN(tg.url, ":", 2)[0]+":"] = true
		if tg.notWeb != "" && !dup[tg.id] {
			dup[tg.id] = true
			nonWeb = append(nonWeb, tg)
		}
	}
	if len(nonWeb) == 0 {
		t.Log("Chromium created no target that is not web content this time; the refusals below are then vacuous")
	}
	keys := make([]string, 0, len(types))
	for k := range types {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	t.Logf("target types and schemes Chromium created (every context): %v", keys)
	t.Logf("not web content: %d targets %v", len(nonWeb), nonWeb)

	t.Run("listings", func(t *testing.T) {
		res, err := m.CallWithin("", "Target.getTargets", nil, 10*time.Second)
		if err != nil {
			t.Fatalf("Target.getTargets: %v", err)
		}
		var r struct {
			TargetInfos []struct {
				Type, URL string
			} `json:"targetInfos"`
		}
		_ = json.Unmarshal(res, &r)
		for _, ti := range r.TargetInfos {
			if !slices.Contains([]string{"page", "iframe", "worker", "shared_worker", "service_worker", "tab"}, ti.Type) || !isWebURL(ti.URL) {
				t.Errorf("Target.getTargets lists %s %s", ti.Type, ti.URL)
			}
		}
		if len(r.TargetInfos) == 0 {
			t.Errorf("Target.getTargets lists none of mallory's own tabs")
		}
		_, _, body := getList(t, e.base, "mallory")
		noNonWeb(t, "/json/list", body)
		noNonWeb(t, "mallory's events", m.EventsText())
	})
	t.Run("attachRefused", func(t *testing.T) {
		res, err := m.CallWithin("", "Target.getTargetInfo", map[string]any{"targetId": malTarget}, 10*time.Second)
		var ti struct {
			TargetInfo struct {
				BrowserContextID string `json:"browserContextId"`
			} `json:"targetInfo"`
		}
		if err != nil || json.Unmarshal(res, &ti) != nil {
			t.Fatalf("mallory's context: %s %v", res, err)
		}
		own := 0
		for _, tg := range nonWeb {
			rule := "not in this user's browser context"
			if tg.context == ti.TargetInfo.BrowserContextID {
				rule, own = "is not web content", own+1
			}
			for _, c := range []struct {
				method string
				params map[string]any
			}{
				{"Target.attachToTarget", map[string]any{"targetId": tg.id, "flatten": true}},
				{"Target.attachToTarget", map[string]any{"targetId": tg.id, "flatten": false}},
				{"Target.activateTarget", map[string]any{"targetId": tg.id}},
				{"Target.closeTarget", map[string]any{"targetId": tg.id}},
				{"Target.getTargetInfo", map[string]any{"targetId": tg.id}},
			} {
				_, err := m.CallWithin("", c.method, c.params, 10*time.Second)
				// Another user's non-web target is refused as another user's.
				refused(t, c.method+" on "+tg.typ+" "+tg.url, err, rule)
			}
		}
		t.Logf("%d of the %d non-web targets are in mallory's own context", own, len(nonWeb))
	})
	t.Run("secondBrowserSession", func(t *testing.T) {
		res, err := m.CallWithin("", "Target.attachToBrowserTarget", nil, 10*time.Second)
		var bs struct {
			SessionID string `json:"sessionId"`
		}
		if err != nil || json.Unmarshal(res, &bs) != nil || bs.SessionID == "" {
			t.Fatalf("Target.attachToBrowserTarget: %s %v", res, err)
		}
		if _, err := m.CallWithin(bs.SessionID, "Target.setDiscoverTargets", map[string]any{"discover": true, "filter": []map[string]any{{}}}, 10*time.Second); err != nil {
			t.Errorf("setDiscoverTargets: %v", err)
		}
		// Everything but tabs, then everything but pages (Chrome refuses
		// both at once).
		for i, filter := range [][]map[string]any{{{"type": "tab", "exclude": true}, {}}, {{"type": "page", "exclude": true}, {}}} {
			if _, err := m.CallWithin(bs.SessionID, "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true, "filter": filter}, 10*time.Second); err != nil {
				t.Errorf("setAutoAttach %v: %v", filter, err)
			}
			// Chrome makes new UI targets as tabs open and navigate.
			_, s3 := m.OpenPage(t, userURL(e.h, "mallory")+"&web=2"+strings.Repeat("x", i))
			time.Sleep(500 * time.Millisecond)
			res, _ = m.CallWithin(bs.SessionID, "Target.getTargets", nil, 10*time.Second)
			noNonWeb(t, "Target.getTargets on a second browser session", string(res))
			noNonWeb(t, "mallory's events with discovery and auto-attach on everything", m.EventsText())
			_, _ = m.CallWithin(bs.SessionID, "Target.setAutoAttach", map[string]any{"autoAttach": false, "waitForDebuggerOnStart": false}, 10*time.Second)
			_, _ = m.CallWithin(s3, "Page.close", nil, 10*time.Second)
		}
	})
	t.Run("createRefused", func(t *testing.T) {
		for _, u := range []string{"chrome://settings/", "chrome-untrusted://print/", "devtools://devtools/bundled/inspector.html", "chrome-search://local-ntp/", "chrome-extension://abcdefghijklmnop/x.html", "CHROME://version"} {
			_, err := m.CallWithin("", "Target.createTarget", map[string]any{"url": u}, 10*time.Second)
			refused(t, "Target.createTarget "+u, err, "scheme")
		}
	})
	t.Run("evaluateOnlyInWebContent", func(t *testing.T) {
		// Every session mallory ever got: evaluate there shows a web URL.
		var sessions []string
		events := m.Events()
		detached := map[string]bool{}
		for _, ev := range events {
			if ev.Method == "Target.detachedFromTarget" {
				var d struct {
					SessionID string `json:"sessionId"`
				}
				_ = json.Unmarshal(ev.Params, &d)
				detached[d.SessionID] = true
			}
		}
		for _, ev := range events {
			if ev.Method != "Target.attachedToTarget" {
				continue
			}
			var a struct {
				SessionID  string                     `json:"sessionId"`
				TargetInfo struct{ Type, URL string } `json:"targetInfo"`
			}
			if json.Unmarshal(ev.Params, &a) == nil && a.TargetInfo.Type != "browser" {
				if !isWebURL(a.TargetInfo.URL) {
					t.Errorf("mallory was attached to %s %s", a.TargetInfo.Type, a.TargetInfo.URL)
				}
				if !detached[a.SessionID] && (a.TargetInfo.Type == "page" || a.TargetInfo.Type == "iframe") {
					sessions = append(sessions, a.SessionID)
				}
			}
		}
		for _, s := range append(sessions, malPage, s2) {
			got, err := m.Eval(s, `location.href`)
			if err == nil && !isWebURL(strings.Trim(got, `"`)) {
				t.Errorf("Runtime.evaluate ran in %s", got)
			}
		}
	})
}
