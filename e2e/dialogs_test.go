package e2e

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestDialogsNeverHang opens a page that loops alert/confirm/prompt on load,
// keeps alerting, and asks before unload: the agent's evaluations and its
// next navigation must still return within bounds (no dialog hangs a page: README, first section), with no
// dialog handling by the agent.
func TestDialogsNeverHang(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	h := testhosts.Start(t)
	bctx := connect(t, endpoint(t))
	tab := newTab(t, bctx)

	start := time.Now()
	if errText, err := navigateNoWait(tab, h.PageURL("/dialogs.html")); err != nil || errText != "" {
		t.Fatalf("navigate to dialogs page: errorText=%q err=%v", errText, err)
	}
	t.Run("evaluateAfterLoop", func(t *testing.T) {
		if err := pollTrue(tab, 10*time.Second, `window.__rounds === 5`); err != nil {
			t.Fatalf("evaluate did not see the dialog loop finish: %v (a dialog is hanging the page)", err)
		}
		t.Logf("dialog loop finished, evaluate answered %v after navigation", time.Since(start).Round(time.Millisecond))
	})
	t.Run("evaluateWhileAlerting", func(t *testing.T) {
		for i := range 5 {
			if _, err := step(tab, 3*time.Second, chromedp.Evaluate[int](`1 + 1`)); err != nil {
				t.Fatalf("evaluate %d while the page alerts every 300 ms: %v", i, err)
			}
			time.Sleep(150 * time.Millisecond)
		}
	})
	t.Run("navigateAwayPastBeforeunload", func(t *testing.T) {
		// A user activation makes Chrome show the beforeunload dialog.
		if _, err := evalBool(tab, 3*time.Second, `document.getElementById("touch").click(), true`, withGesture); err != nil {
			t.Fatalf("click: %v", err)
		}
		if _, err := step(tab, 10*time.Second, chromedp.Navigate(h.PageURL("/page.html"))); err != nil {
			t.Fatalf("navigate away from a page with a beforeunload handler: %v", err)
		}
		// Polled: in a loaded CI run the evaluate right after Navigate
		// still found a document without the marker.
		if err := pollTrue(tab, 10*time.Second, `document.getElementById("marker")?.textContent === "allowed-page-marker"`); err != nil {
			got, _ := step(tab, 3*time.Second, chromedp.Evaluate[string](`location.href`))
			t.Errorf("after navigating away: no marker within 10s (%v), at %s", err, got)
		}
	})
}
