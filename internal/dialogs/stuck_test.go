package dialogs

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// chrome answers the guard's calls as Chromium 156 did in the failing
// e2e runs: Page.handleJavaScriptDialog is refused while the page's
// navigation is ready to commit, until a new navigation of the page.
type chrome struct {
	mu      sync.Mutex
	stuck   bool
	calls   []string // method url
	answers int
	// beforeReply, when set, runs before a refusal is returned: the
	// events Chrome sent before its reply.
	beforeReply func()
}

func (c *chrome) Call(_ context.Context, session, method string, params any) (jsonv2.Value, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch method {
	case "Page.handleJavaScriptDialog":
		c.calls = append(c.calls, method)
		if c.stuck {
			if c.beforeReply != nil {
				c.beforeReply()
			}
			return nil, errors.New("Page.handleJavaScriptDialog: Not attached to an active page (-32000)")
		}
		c.answers++
	case "Page.navigate":
		url, _ := params.(map[string]any)["url"].(string)
		c.calls = append(c.calls, method+" "+url)
		c.stuck = false
	}
	return jsonv2.Value(`{}`), nil
}

func (c *chrome) got() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func navigating(frame, url, typ string) []byte {
	return []byte(`{"frameId":"` + frame + `","url":"` + url + `","loaderId":"L","navigationType":"` + typ + `"}`)
}

// TestStuckAfterBeforeunload replays the failing TestDialogsNeverHang
// navigation (docs/decisions/2026-12-02-beforeunload.md): the page's
// beforeunload is accepted, its navigation to /next starts, the old
// document opens an alert and Chrome refuses the guard's answer because
// that navigation is ready to commit. The guard navigates to /next again,
// which ends the navigation that cannot commit (and Chrome closes the
// dialog with it); before, the answer was sent and the page hung.
func TestStuckAfterBeforeunload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &chrome{}
		h := New(&rec{}, testPages, 0, nil)
		h.SetCaller(c)
		h.Attach("S1", "T1")
		h.Opening("S1", ev("beforeunload"))
		synctest.Wait() // accepted
		h.Navigating("S1", navigating("T1", "http://a.test/next", "differentDocument"))
		h.Navigating("S1", navigating("F2", "http://a.test/frame", "differentDocument")) // a subframe's
		h.Navigating("S1", navigating("T1", "http://a.test/next#x", "sameDocument"))
		c.mu.Lock()
		c.stuck = true // the navigation is ready to commit
		c.mu.Unlock()
		h.Opening("S1", ev("alert"))
		h.Close() // waits for the answers in flight
		want := []string{"Page.handleJavaScriptDialog", "Page.handleJavaScriptDialog", "Page.navigate http://a.test/next"}
		if got := c.got(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("calls %q, want %q", got, want)
		}
	})
}

// TestStuckNavigationUnknown: a refused answer with no navigation seen
// navigates nowhere, and a navigation of a subframe or within the document
// is not taken for the page's.
func TestStuckNavigationUnknown(t *testing.T) {
	c := &chrome{stuck: true}
	h := New(&rec{}, testPages, 0, nil)
	h.SetCaller(c)
	h.Attach("S1", "T1")
	h.Navigating("S1", navigating("F2", "http://a.test/frame", "differentDocument"))
	h.Navigating("S1", navigating("T1", "http://a.test/#x", "sameDocument"))
	h.Opening("S1", ev("alert"))
	h.Close()
	if got := c.got(); len(got) != 1 || got[0] != "Page.handleJavaScriptDialog" {
		t.Fatalf("calls %q, want only the refused answer", got)
	}
}

// TestStuckNavigationNotWeb: the guard navigates with the browser's
// authority, so a stuck page whose navigation names a URL a page cannot
// open itself (file:, chrome:) or the Fetch judge never sees is not
// navigated there.
func TestStuckNavigationNotWeb(t *testing.T) {
	for _, u := range []string{"file:///etc/passwd", "chrome://settings/", "javascript:alert(1)", "data:text/html,x", "http:///nohost"} {
		t.Run(u, func(t *testing.T) {
			c := &chrome{stuck: true}
			h := New(&rec{}, testPages, 0, nil)
			h.SetCaller(c)
			h.Attach("S1", "T1")
			h.Navigating("S1", navigating("T1", u, "differentDocument"))
			h.Opening("S1", ev("alert"))
			h.Close()
			if got := c.got(); len(got) != 1 || got[0] != "Page.handleJavaScriptDialog" {
				t.Fatalf("calls %q, want only the refused answer", got)
			}
		})
	}
}

func navigated(frame, parent string) []byte {
	return []byte(`{"frame":{"id":"` + frame + `","parentId":"` + parent + `","loaderId":"L2","url":"http://a.test/next"}}`)
}

// TestRefusedAfterCommit: the old document's alert is answered just as the
// page's navigation commits; Chrome refuses the answer, but its
// Page.frameNavigated came first, so the page is not stuck and is not
// navigated a second time (the e2e navigateAwayPastBeforeunload subtest
// once saw the page load twice). A subframe's commit does not count.
func TestRefusedAfterCommit(t *testing.T) {
	for _, tc := range []struct {
		name, frame, parent string
		want                []string
	}{
		{"main frame committed", "T1", "", []string{"Page.handleJavaScriptDialog"}},
		{"subframe committed", "F2", "T1", []string{"Page.handleJavaScriptDialog", "Page.navigate http://a.test/next"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(&rec{}, testPages, 0, nil)
			c := &chrome{stuck: true}
			c.beforeReply = func() { h.Navigated("S1", navigated(tc.frame, tc.parent)) }
			h.SetCaller(c)
			h.Attach("S1", "T1")
			h.Navigating("S1", navigating("T1", "http://a.test/next", "differentDocument"))
			h.Opening("S1", ev("alert"))
			h.Close()
			if got := c.got(); len(got) != len(tc.want) || got[0] != tc.want[0] || (len(got) > 1 && got[1] != tc.want[1]) {
				t.Fatalf("calls %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStuckUnplacedSession: on a session the page registry does not place
// the guard records no navigation, so a refused answer there navigates
// nowhere (as before the page object, whose check of the main frame's id
// against the session's key never held). The guard's sessions that get
// Page events are its page sessions (Page.enable is sent to pages only,
// and only the root session auto-attaches, so it has no out-of-process
// iframe's or worker's session): one the registry does not place is a
// page past Target.targetDestroyed, which no navigation can unstick.
func TestStuckUnplacedSession(t *testing.T) {
	c := &chrome{stuck: true}
	h := New(&rec{}, testPages, 0, nil)
	h.SetCaller(c)
	h.Navigating("SX", navigating("TX", "http://a.test/next", "differentDocument"))
	h.Opening("SX", ev("alert"))
	h.Close()
	if got := c.got(); len(got) != 1 || got[0] != "Page.handleJavaScriptDialog" {
		t.Fatalf("calls %q, want only the refused answer", got)
	}
}
