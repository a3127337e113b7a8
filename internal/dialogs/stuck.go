package dialogs

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/cdpguard/cdpguard/internal/ascii"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// Caller sends a CDP command and waits for its reply (relay.Mux.Call).
type Caller interface {
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
}

// inactivePage is Chrome's refusal of Page.handleJavaScriptDialog once the
// page's navigation is ready to commit in a new frame host: the dialog of
// the old document can then not be answered, and that document's renderer,
// blocked in it, never lets the new one commit
// (docs/decisions/2026-12-02-beforeunload.md).
const inactivePage = "Not attached to an active page"

// answerWait bounds the guard's wait for Chrome's reply to its answer and
// to the navigation that unsticks a page.
const answerWait = 10 * time.Second

// SetCaller makes the guard send its answers with c, each from a goroutine
// the handler owns, so that it reads Chrome's reply: an answer refused
// because the page's navigation is ready to commit starts that navigation
// again (unstick). Without it answers are only sent.
func (h *Handler) SetCaller(c Caller) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.call = c
}

// Navigating takes a Page.frameStartedNavigating event on the guard's
// session sessionID: the URL of the page's latest cross-document
// navigation of its main frame, which unstick needs. A session the page
// registry does not place records none: it is a page's past its end
// (TestStuckUnplacedSession). It does not block.
func (h *Handler) Navigating(sessionID string, params []byte) {
	var ev struct {
		FrameID        string `json:"frameId"`
		URL            string `json:"url"`
		NavigationType string `json:"navigationType"`
	}
	if cdpmsg.UnmarshalBrowser(params, &ev) != nil || ev.URL == "" {
		return
	}
	if ev.NavigationType == "sameDocument" || ev.NavigationType == "historySameDocument" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	target := h.targetOf(sessionID)
	if p := h.rec(target); p != nil && ev.FrameID == target { // a page's main frame id is its target id
		p.navURL, p.committed = ev.URL, false
	}
}

// Navigated takes a Page.frameNavigated event on the guard's session
// sessionID: once the main frame committed a document, a refused answer
// came too late for the old document's dialog (the commit closed it), and
// unstick must not navigate the page a second time. The commit's event
// comes before Chrome's reply to an answer it refused after the commit:
// both are on the page's session, in order. It does not block.
func (h *Handler) Navigated(sessionID string, params []byte) {
	var ev struct {
		Frame struct {
			ID       string `json:"id"`
			ParentID string `json:"parentId"`
		} `json:"frame"`
	}
	if cdpmsg.UnmarshalBrowser(params, &ev) != nil || ev.Frame.ParentID != "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	target := h.targetOf(sessionID)
	if p := h.rec(target); p != nil && ev.Frame.ID == target {
		p.committed = true
	}
}

// send sends the guard's answer to Page.handleJavaScriptDialog on
// sessionID; see SetCaller.
func (h *Handler) send(sessionID string, accept bool) {
	params := map[string]any{"accept": accept}
	h.mu.Lock()
	call := h.call
	if call != nil && !h.closed {
		h.wg.Add(1) // Close sets closed before it waits
	} else {
		call = nil
	}
	h.mu.Unlock()
	if call == nil {
		if err := h.sender.Send(sessionID, "Page.handleJavaScriptDialog", params); err != nil {
			h.log.Debug("dialog answer failed", "err", err)
		}
		return
	}
	go func() {
		defer h.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), answerWait)
		defer cancel()
		_, err := call.Call(ctx, sessionID, "Page.handleJavaScriptDialog", params)
		switch {
		case err == nil:
		case strings.Contains(err.Error(), inactivePage):
			h.unstick(ctx, call, sessionID)
		default:
			h.log.Debug("dialog answer failed", "err", err)
		}
	}()
}

// unstick starts the page's latest navigation again when Chrome refused
// the guard's answer because that navigation is ready to commit, unless it
// has committed since or Chrome closed the dialog: a new
// navigation of the frame ends the one that cannot commit, and Chrome
// closes the old document's dialog with it. The request goes through the
// guard's interception as any other.
func (h *Handler) unstick(ctx context.Context, call Caller, sessionID string) {
	h.mu.Lock()
	var dest string
	settled := false
	if p := h.placed(sessionID); p != nil {
		dest = p.navURL
		settled = p.committed || (p.cur != nil && p.cur.gone)
	}
	h.mu.Unlock()
	if settled {
		// The answer raced the commit, which closed the dialog: navigating
		// again would load the page twice under the agent (e2e
		// TestDialogsNeverHang/navigateAwayPastBeforeunload, 1 run in 40).
		h.log.Debug("Chrome refused the guard's dialog answer after the page's navigation committed; nothing to unstick", "session", sessionID)
		return
	}
	if dest == "" {
		h.log.Warn("Chrome refused the guard's dialog answer while the page navigates, and the navigation's URL is unknown: the page may stay blocked", "session", sessionID)
		return
	}
	// The guard navigates with the browser's authority, which a page's own
	// navigation does not have (a page cannot open file: or chrome: URLs;
	// Page.navigate can): only a URL the Fetch judge sees goes again.
	if !webURL(dest) {
		h.log.Warn("Chrome refused the guard's dialog answer while the page navigates to a URL the guard does not open: the page may stay blocked", "url", clip.String(dest))
		return
	}
	h.log.Warn("Chrome refused the guard's dialog answer while the page's navigation is ready to commit; navigating again", "url", dest)
	if _, err := call.Call(ctx, sessionID, "Page.navigate", map[string]any{"url": dest}); err != nil {
		h.log.Warn("navigating again to unstick a dialog failed", "url", dest, "err", err)
	}
}

// webURL reports whether u is an http(s) URL: the only navigations the
// guard starts again on a page's behalf.
func webURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (ascii.EqualFold(p.Scheme, "http") || ascii.EqualFold(p.Scheme, "https")) && p.Host != ""
}
