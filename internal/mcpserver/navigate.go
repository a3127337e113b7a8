package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
)

// Bounds of the waits around navigations.
const (
	loadWait     = 20 * time.Second       // a navigation's load event after an action
	startedWait  = 150 * time.Millisecond // a click or key starting a navigation (its events come with the input's reply; this is slack)
	quietWait    = 50 * time.Millisecond  // typing, selecting, hovering
	blockedTitle = "Blocked by cdpguard"  // the guard's explanation page
)

// blockedError is the tool error for a URL the allowlist refuses: it names
// the host and lists what is reachable, so the model can pick another URL.
func (s *Server) blockedError(user, rawURL, reason string) error {
	host := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		host = u.Hostname()
	}
	msg := fmt.Sprintf("%s is blocked by the browser's allowlist", host)
	if reason != "" {
		msg += " (" + reason + ")"
	}
	// A sentence for the model, so it ends with a full stop.
	return &RefusedError{URL: rawURL, Host: host, Reason: reason, sentence: msg + ". " + s.reachable(user) + s.granted(user) + " Do not retry this host."}
}

// schemes are the URL schemes the tools open.
var schemes = map[string]bool{"http": true, "https": true, "about": true}

// checkURL refuses, before anything reaches the browser, a URL the
// allowlist blocks. The guard enforces the same policy again on the way.
func (s *Server) checkURL(user, raw string) error {
	if strings.TrimSpace(raw) == "" {
		return errors.New("url is empty; pass an absolute http(s) URL")
	}
	if len(raw) > maxURL {
		return fmt.Errorf("url is %d bytes long; the limit is %d", len(raw), maxURL)
	}
	u, err := url.Parse(raw)
	if err == nil && u.Scheme != "" && !schemes[strings.ToLower(u.Scheme)] {
		sc := strings.ToLower(u.Scheme)
		return &RefusedError{URL: raw, Scheme: sc, Reason: "scheme refused", sentence: fmt.Sprintf("the %s: scheme is refused: this browser opens only http and https URLs. %s", sc, s.reachable(user))}
	}
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Scheme != "about") {
		return fmt.Errorf("url %q is not an absolute URL; pass one like https://host/path", clip(raw, 200))
	}
	if s.opts.Decide != nil {
		if ok, reason := s.opts.Decide(user, raw); !ok {
			return s.blockedError(user, raw, reason)
		}
	}
	return nil
}

// errStillLoading: navigate's load limit ran out before the load event.
var errStillLoading = errors.New("the page is still loading")

// navigate loads raw in t and waits until its load event: at most
// loadLimit (then errStillLoading) when that is set, else until the call's
// bound, which ends a page that never loads with a TimeoutError naming it.
func (u *user) navigate(ctx context.Context, t *tab, raw string, loadLimit time.Duration) error {
	if err := u.srv.checkURL(u.key, raw); err != nil {
		return err
	}
	u.snap = nil
	u.doing = "loading the page at " + clip(raw, 300)
	u.hint = "it may still be loading: call browser_read (no url) or browser_snapshot to see what it shows by now"
	mark := u.blockCount()
	loads, stop := t.s.Subscribe(page.LoadEventFired.Method)
	defer stop()
	res, err := cdp.Call(ctx, t.s, page.Navigate, page.NavigateParams{URL: raw})
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return &PageError{Msg: fmt.Sprintf("opening %s failed: %v", clip(raw, 300), err), Err: err}
	}
	if res.ErrorText != "" {
		if b, ok := u.topLevelBlock(t, mark); ok {
			return u.srv.blockedError(u.key, b.URL, b.Reason)
		}
		return &PageError{Msg: fmt.Sprintf("loading %s failed: %s", clip(raw, 300), res.ErrorText)}
	}
	var limit <-chan time.Time
	if loadLimit > 0 {
		tm := time.NewTimer(loadLimit)
		defer tm.Stop()
		limit = tm.C
	}
	still := false
	if res.LoaderID != "" {
		select {
		case <-loads:
		case <-limit:
			still = true
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	u.doing, u.hint = "", ""
	if b, ok := u.topLevelBlock(t, mark); ok {
		return u.srv.blockedError(u.key, b.URL, b.Reason+"; reached from "+clip(raw, 200))
	}
	if err := u.checkLanded(ctx, t, raw); err != nil {
		return err
	}
	if still {
		return errStillLoading
	}
	return nil
}

// timeoutErr is the error of a call that hit its bound.
func (u *user) timeoutErr(name string, bound time.Duration) error {
	doing, hint := u.doing, u.hint
	if doing == "" {
		doing = name
		switch name {
		case "browser_evaluate":
			hint = "the page's script did not return (a promise that never settles, or a busy page); try a shorter one"
		case "browser_snapshot", "browser_take_screenshot":
			hint = "the page is very large or busy; try browser_read"
		default:
			hint = "the page may be busy; try again or take a new snapshot"
		}
	}
	return &TimeoutError{Doing: doing, After: bound, Hint: hint}
}

// checkLanded turns the guard's explanation page (a redirect to a blocked
// host, say) into the blocked-URL error, when no Guard.requestBlocked
// event named it (a block the guard could not tie to the tab).
func (u *user) checkLanded(ctx context.Context, t *tab, raw string) error {
	info, err := u.info(ctx, t)
	if err != nil {
		return err
	}
	// The guard serves its explanation page at the blocked URL; a page that
	// merely titles itself so, on an allowed URL, is not believed.
	if strings.HasPrefix(info.Title, blockedTitle) && u.srv.opts.Decide != nil {
		if ok, reason := u.srv.opts.Decide(u.key, info.URL); !ok {
			return u.srv.blockedError(u.key, info.URL, reason+"; reached from "+clip(raw, 200))
		}
	}
	return nil
}

// info returns the tab's URL and title as the browser reports them.
func (u *user) info(ctx context.Context, t *tab) (*target.Info, error) {
	res, err := cdp.Call(ctx, Session{p: u.pipe}, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: t.id})
	if err != nil {
		return nil, err
	}
	if res.TargetInfo == nil {
		return nil, errors.New("the tab is gone")
	}
	return res.TargetInfo, nil
}

// whileNavigating runs act and, if act starts a navigation of the main
// frame, waits (bounded) until the new page has loaded.
func (u *user) whileNavigating(ctx context.Context, t *tab, act func() error) error {
	return u.whileNavigatingFor(ctx, t, startedWait, act)
}

// whileNavigatingFor is whileNavigating with the slack for a navigation's
// first event after act's input was acknowledged. A navigation the guard
// blocks is the blocked-URL error, as from browser_navigate.
func (u *user) whileNavigatingFor(ctx context.Context, t *tab, window time.Duration, act func() error) error {
	mark := u.blockCount()
	navigated, err := u.watchNavigation(ctx, t, window, act)
	if err != nil {
		return err
	}
	if b, ok := u.topLevelBlock(t, mark); ok {
		return u.srv.blockedError(u.key, b.URL, b.Reason)
	}
	if navigated {
		return u.checkLanded(ctx, t, "")
	}
	return nil
}

// watchNavigation runs act and, if act starts a navigation of the main
// frame, waits (bounded) until the new page has loaded.
func (u *user) watchNavigation(ctx context.Context, t *tab, window time.Duration, act func() error) (bool, error) {
	var started []<-chan jsonv2.Value
	var stops []func()
	for _, m := range []string{"Page.frameRequestedNavigation", "Page.frameStartedNavigating", "Page.frameStartedLoading"} {
		ch, stop := t.s.Subscribe(m)
		started, stops = append(started, ch), append(stops, stop)
	}
	loads, stop := t.s.Subscribe(page.LoadEventFired.Method)
	stops = append(stops, stop)
	// Navigations that fire no load event: a page restored from the
	// back/forward cache, and same-document ones.
	committed, stop := t.s.Subscribe("Page.frameNavigated")
	stops = append(stops, stop)
	within, stop := t.s.Subscribe("Page.navigatedWithinDocument")
	stops = append(stops, stop)
	// Navigations that end without a document: a download (allowed or
	// refused) or a response with none (204); without it the wait ran its
	// whole loadWait (20 s) after a click on a download link.
	stopped, stop := t.s.Subscribe("Page.frameStoppedLoading")
	stops = append(stops, stop)
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	if err := act(); err != nil {
		return false, err
	}
	tm := time.NewTimer(window)
	defer tm.Stop()
	for {
		var ev jsonv2.Value
		select {
		case ev = <-started[0]:
		case ev = <-started[1]:
		case ev = <-started[2]:
		case <-loads:
			u.snap = nil
			return true, nil
		case <-tm.C:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
		var f struct {
			FrameID cdp.FrameID `json:"frameId"`
		}
		if jsonv2.Unmarshal(ev, &f) != nil || f.FrameID != t.frame() {
			continue // a subframe: the main document stays
		}
		u.snap = nil
		u.doing = "loading the page the action opened"
		u.hint = "it may still be loading: call browser_read (no url) or browser_snapshot to see what it shows by now"
		waitSettled(ctx, t.frame(), settleEvents{loads, committed, within, stopped})
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		u.doing, u.hint = "", ""
		return true, nil
	}
}

// settleEvents are the events that end the wait for a navigation.
type settleEvents struct {
	loads, committed, within, stopped <-chan jsonv2.Value
}

// waitSettled waits (bounded) until the main frame's navigation has loaded,
// was restored from the back/forward cache, stayed in the document, or
// stopped without a document (a download, allowed or refused).
func waitSettled(ctx context.Context, frame cdp.FrameID, ev settleEvents) {
	tm := time.NewTimer(loadWait)
	defer tm.Stop()
	for {
		var f struct {
			FrameID cdp.FrameID `json:"frameId"`
			Frame   struct {
				ID cdp.FrameID `json:"id"`
			} `json:"frame"`
			Type string `json:"type"`
		}
		select {
		case <-ev.loads:
			return
		case e := <-ev.committed:
			if jsonv2.Unmarshal(e, &f) == nil && f.Frame.ID == frame && f.Type == "BackForwardCacheRestore" {
				return
			}
		case e := <-ev.within:
			if jsonv2.Unmarshal(e, &f) == nil && f.FrameID == frame {
				return
			}
		case e := <-ev.stopped:
			if jsonv2.Unmarshal(e, &f) == nil && f.FrameID == frame {
				return
			}
		case <-tm.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// pageLine describes the tab for a tool result: no success without a URL.
func (u *user) pageLine(ctx context.Context, t *tab) (string, error) {
	info, err := u.info(ctx, t)
	if err != nil {
		return "", err
	}
	if info.URL == "" {
		return "", &PageError{Msg: "the tab shows no page (its URL is empty); call browser_navigate"}
	}
	return fmt.Sprintf("Page URL: %s\nPage title: %s", clip(info.URL, 2000), clip(info.Title, 300)), nil
}

// stopLoading stops the current tab's loading (bounded), after a call that
// timed out waiting for it.
func (u *user) stopLoading() {
	if u.cur == nil {
		return
	}
	ctx, cancel := context.WithTimeout(u.srv.ctx, time.Second)
	defer cancel()
	_ = u.cur.s.Call(ctx, page.CommandStopLoading, nil, nil)
}
