package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestRedTeamStuckDialog is a hostile agent's way to kill the browser for
// every user (DESIGN.md I2) through a Chromium 156 bug: its page accepts a
// beforeunload and then alerts in a loop while the agent navigates it, so
// that an alert is open when the new document is ready to commit and the
// page is stuck; a session with Page events enabled that then leaves the
// page (Target.detachFromTarget of its session, by its target id or of the
// browser-level session that attached it, Target.setAutoAttach switched
// off, Page.disable, or its connection closing) crashed the browser
// (docs/decisions/2026-12-02-beforeunload.md). The agent keeps Page events
// on, so the guard waits its dialog grace before answering the alert,
// which holds the page stuck. Alice's connection and page must survive
// every way out; closing the page or its browser context are tried too.
func TestRedTeamStuckDialog(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	e := setupRedTeam(t)
	for _, leave := range []struct {
		name string
		// open opens mallory's page; nil is cdptest's OpenPage.
		open func(t *testing.T, m *cdptest.Client, u string) stuckPage
		do   func(m *cdptest.Client, p stuckPage) error
	}{
		{"detach", nil, func(m *cdptest.Client, p stuckPage) error {
			return leaveBy(m, "", "Target.detachFromTarget", map[string]any{"sessionId": p.session})
		}},
		{"pageDisable", nil, func(m *cdptest.Client, p stuckPage) error {
			return leaveBy(m, p.session, "Page.disable", nil)
		}},
		{"hangUp", nil, func(m *cdptest.Client, _ stuckPage) error {
			m.Close()
			return nil
		}},
		// The deprecated form: Chrome detaches the session this one
		// attached to the target.
		{"detachByTarget", nil, func(m *cdptest.Client, p stuckPage) error {
			return leaveBy(m, "", "Target.detachFromTarget", map[string]any{"targetId": p.target})
		}},
		{"closeTarget", nil, func(m *cdptest.Client, p stuckPage) error {
			return leaveBy(m, "", "Target.closeTarget", map[string]any{"targetId": p.target})
		}},
		{"pageClose", nil, func(m *cdptest.Client, p stuckPage) error {
			return leaveBy(m, p.session, "Page.close", nil)
		}},
		// Chrome detaches the sessions a browser-level session attached
		// when that one is detached.
		{"detachParent", openUnder, func(m *cdptest.Client, p stuckPage) error {
			return leaveBy(m, "", "Target.detachFromTarget", map[string]any{"sessionId": p.parent})
		}},
		// Auto-attached sessions end when auto-attach is switched off.
		{"autoAttachOff", openAuto, func(m *cdptest.Client, p stuckPage) error {
			return leaveBy(m, "", "Target.setAutoAttach", map[string]any{"autoAttach": false, "waitForDebuggerOnStart": false, "flatten": true})
		}},
		{"disposeContext", openInContext, func(m *cdptest.Client, p stuckPage) error {
			return leaveBy(m, "", "Target.disposeBrowserContext", map[string]any{"browserContextId": p.context})
		}},
	} {
		t.Run(leave.name, func(t *testing.T) {
			m := cdptest.Connect(t, e.base, "mallory")
			var p stuckPage
			if leave.open != nil {
				p = leave.open(t, m, e.h.PageURL("/stuck.html"))
			} else {
				p.target, p.session = m.OpenPage(t, e.h.PageURL("/stuck.html"))
			}
			session := p.session
			// A user activation makes Chrome show the beforeunload dialog.
			if _, err := m.CallWithin(session, "Runtime.evaluate", map[string]any{"expression": `document.getElementById("touch").click(), 1`, "userGesture": true}, 10*time.Second); err != nil {
				t.Fatalf("click: %v", err)
			}
			navigated := make(chan error, 1)
			go func() { // bounded by CallWithin; the channel is buffered
				// The next document's response comes 200 ms late, so the
				// page's alerts (every millisecond once the beforeunload is
				// accepted) are open when it arrives: an answer at once
				// lost that race on a loaded machine.
				next := e.h.Allowed.Origin() + testhosts.HitPath("stuck-"+leave.name) + "?delay=200"
				_, err := m.CallWithin(session, "Page.navigate", map[string]any{"url": next}, 10*time.Second)
				navigated <- err
			}()
			if _, ok := m.WaitEvent(10*time.Second, func(ev cdptest.Message) bool {
				return ev.SessionID == session && ev.Method == "Page.javascriptDialogOpening" && strings.Contains(string(ev.Params), `"beforeunload"`)
			}); !ok {
				t.Fatalf("no beforeunload dialog within 10s")
			}
			if _, err := m.CallWithin(session, "Page.handleJavaScriptDialog", map[string]any{"accept": true}, 10*time.Second); err != nil {
				t.Fatalf("accept the beforeunload: %v", err)
			}
			if _, ok := m.WaitEvent(10*time.Second, func(ev cdptest.Message) bool {
				return ev.SessionID == session && ev.Method == "Page.javascriptDialogOpening" && strings.Contains(string(ev.Params), `"alert"`)
			}); !ok {
				t.Fatalf("no alert after the beforeunload within 10s")
			}
			time.Sleep(500 * time.Millisecond) // the new document's response arrives: the page is stuck
			if err := leave.do(m, p); err != nil {
				t.Logf("mallory's %s: %v", leave.name, err)
			}
			select {
			case err := <-navigated:
				t.Logf("mallory's navigation: %v", err)
			case <-time.After(12 * time.Second):
				t.Errorf("mallory's Page.navigate got no answer within 12s")
			}
			if _, err := e.alice.CallWithin("", "Browser.getVersion", nil, 10*time.Second); err != nil {
				t.Fatalf("alice's connection after mallory's %s on a stuck page: %v", leave.name, err)
			}
			e.aliceIntact(t)
		})
	}
}

// leaveBy sends mallory's way out, bounded; its answer does not matter.
func leaveBy(m *cdptest.Client, session, method string, params any) error {
	_, err := m.CallWithin(session, method, params, 10*time.Second)
	return err
}

// stuckPage is mallory's page: its target, its session, the session that
// attached it ("" for the connection's own) and the browser context it
// made for it, if it did.
type stuckPage struct{ target, session, parent, context string }

// stuckCall sends method on session and returns the string field of its
// result ("" = none wanted).
func stuckCall(t *testing.T, m *cdptest.Client, session, method string, params map[string]any, field string) string {
	t.Helper()
	res, err := m.CallWithin(session, method, params, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	var r map[string]any
	_ = json.Unmarshal(res, &r)
	s, _ := r[field].(string)
	if field != "" && s == "" {
		t.Fatalf("%s: no %s in %s", method, field, res)
	}
	return s
}

// openUnder attaches a browser-level session, opens a page on it and
// attaches to the page from it (as Playwright does).
func openUnder(t *testing.T, m *cdptest.Client, u string) stuckPage {
	t.Helper()
	var p stuckPage
	p.parent = stuckCall(t, m, "", "Target.attachToBrowserTarget", nil, "sessionId")
	p.target = stuckCall(t, m, p.parent, "Target.createTarget", map[string]any{"url": "about:blank"}, "targetId")
	p.session = stuckCall(t, m, p.parent, "Target.attachToTarget", map[string]any{"targetId": p.target, "flatten": true}, "sessionId")
	m.LoadPage(t, p.session, u)
	return p
}

// openAuto switches auto-attach on and opens a page, which it attaches.
func openAuto(t *testing.T, m *cdptest.Client, u string) stuckPage {
	t.Helper()
	var p stuckPage
	stuckCall(t, m, "", "Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": false, "flatten": true}, "")
	p.target = stuckCall(t, m, "", "Target.createTarget", map[string]any{"url": "about:blank"}, "targetId")
	ev, ok := m.WaitEvent(10*time.Second, func(ev cdptest.Message) bool {
		return ev.Method == "Target.attachedToTarget" && strings.Contains(string(ev.Params), p.target)
	})
	if !ok {
		t.Fatal("no Target.attachedToTarget for the new page within 10s")
	}
	var a struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(ev.Params, &a)
	p.session = a.SessionID
	m.LoadPage(t, p.session, u)
	return p
}

// openInContext opens and attaches a page in a browser context of its own.
func openInContext(t *testing.T, m *cdptest.Client, u string) stuckPage {
	t.Helper()
	var p stuckPage
	p.context = stuckCall(t, m, "", "Target.createBrowserContext", nil, "browserContextId")
	p.target = stuckCall(t, m, "", "Target.createTarget", map[string]any{"url": "about:blank", "browserContextId": p.context}, "targetId")
	p.session = stuckCall(t, m, "", "Target.attachToTarget", map[string]any{"targetId": p.target, "flatten": true}, "sessionId")
	m.LoadPage(t, p.session, u)
	return p
}
