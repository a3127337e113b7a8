package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// TestRedTeamStuckDialog is a hostile agent's way to kill the browser for
// every user (DESIGN.md I2) through a Chromium 156 bug: its page accepts a
// beforeunload and then alerts in a loop while the agent navigates it, so
// that an alert is open when the new document is ready to commit and the
// page is stuck; a session with Page events enabled that then leaves the
// page (Target.detachFromTarget, Page.disable, or its connection closing)
// crashed the browser (docs/decisions/2026-12-02-beforeunload.md). The
// agent keeps Page events on, so the guard waits its dialog grace before
// answering the alert, which holds the page stuck. Alice's connection and
// page must survive every way out.
func TestRedTeamStuckDialog(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	e := setupRedTeam(t)
	for _, leave := range []struct {
		name string
		do   func(m *cdptest.Client, session string) error
	}{
		{"detach", func(m *cdptest.Client, session string) error {
			_, err := m.CallWithin("", "Target.detachFromTarget", map[string]any{"sessionId": session}, 10*time.Second)
			return err
		}},
		{"pageDisable", func(m *cdptest.Client, session string) error {
			_, err := m.CallWithin(session, "Page.disable", nil, 10*time.Second)
			return err
		}},
		{"hangUp", func(m *cdptest.Client, _ string) error {
			m.Close()
			return nil
		}},
	} {
		t.Run(leave.name, func(t *testing.T) {
			m := cdptest.Connect(t, e.base, "mallory")
			_, session := m.OpenPage(t, e.h.PageURL("/stuck.html"))
			// A user activation makes Chrome show the beforeunload dialog.
			if _, err := m.CallWithin(session, "Runtime.evaluate", map[string]any{"expression": `document.getElementById("touch").click(), 1`, "userGesture": true}, 10*time.Second); err != nil {
				t.Fatalf("click: %v", err)
			}
			navigated := make(chan error, 1)
			go func() { // bounded by CallWithin; the channel is buffered
				_, err := m.CallWithin(session, "Page.navigate", map[string]any{"url": userURL(e.h, "mallory") + "&after=stuck"}, 10*time.Second)
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
			time.Sleep(300 * time.Millisecond) // the new document's response arrives: the page is stuck
			if err := leave.do(m, session); err != nil {
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
