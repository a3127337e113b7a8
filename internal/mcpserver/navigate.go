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
	loadWait     = 20 * time.Second       // a navigation's load event
	startedWait  = 700 * time.Millisecond // a click or key starting a navigation
	quietWait    = 200 * time.Millisecond // typing, selecting, hovering
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
	return errors.New(msg + ". " + s.reachable(user) + s.granted(user) + " Do not retry this host.")
}

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

// navigate loads raw in t and waits (bounded) for its load event.
func (u *user) navigate(ctx context.Context, t *tab, raw string) error {
	if err := u.srv.checkURL(u.key, raw); err != nil {
		return err
	}
	u.snap = nil
	loads, stop := t.s.Subscribe(page.LoadEventFired.Method)
	defer stop()
	res, err := cdp.Call(ctx, t.s, page.Navigate, page.NavigateParams{URL: raw})
	if err != nil {
		return u.srv.explain(u.key, raw, err)
	}
	if res.ErrorText != "" {
		if strings.Contains(res.ErrorText, "BLOCKED") {
			return u.srv.blockedError(u.key, raw, res.ErrorText)
		}
		return fmt.Errorf("loading %s failed: %s", raw, res.ErrorText)
	}
	if res.LoaderID != "" {
		waitLoad(ctx, loads)
	}
	return u.checkLanded(ctx, t, raw)
}

// explain turns the guard's refusal of a navigation into the blocked-URL
// error; other errors pass.
func (s *Server) explain(user, raw string, err error) error {
	if strings.Contains(err.Error(), "cdpguard") && strings.Contains(strings.ToLower(err.Error()), "block") {
		return s.blockedError(user, raw, err.Error())
	}
	return err
}

// checkLanded turns the guard's explanation page (a redirect to a blocked
// host, say) into the blocked-URL error.
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

func waitLoad(ctx context.Context, loads <-chan jsonv2.Value) bool {
	tm := time.NewTimer(loadWait)
	defer tm.Stop()
	select {
	case <-loads:
		return true
	case <-tm.C:
	case <-ctx.Done():
	}
	return false
}

// info returns the tab's URL and title as the browser reports them.
func (u *user) info(ctx context.Context, t *tab) (*target.Info, error) {
	res, err := cdp.Call(ctx, Session{p: u.pipe}, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: target.ID(t.id)})
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

// whileNavigatingFor is whileNavigating with the wait for a navigation to
// start: shorter for actions that rarely navigate (typing, selecting).
func (u *user) whileNavigatingFor(ctx context.Context, t *tab, window time.Duration, act func() error) error {
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
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	if err := act(); err != nil {
		return err
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
			return nil
		case <-tm.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		var f struct {
			FrameID string `json:"frameId"`
		}
		if jsonv2.Unmarshal(ev, &f) != nil || f.FrameID != t.id {
			continue // a subframe: the main document stays
		}
		u.snap = nil
		waitSettled(ctx, t.id, loads, committed, within)
		return nil
	}
}

// waitSettled waits (bounded) until the main frame's navigation has loaded,
// was restored from the back/forward cache, or stayed in the document.
func waitSettled(ctx context.Context, frame string, loads, committed, within <-chan jsonv2.Value) {
	tm := time.NewTimer(loadWait)
	defer tm.Stop()
	for {
		select {
		case <-loads:
			return
		case ev := <-committed:
			var n struct {
				Frame struct {
					ID string `json:"id"`
				} `json:"frame"`
				Type string `json:"type"`
			}
			if jsonv2.Unmarshal(ev, &n) == nil && n.Frame.ID == frame && n.Type == "BackForwardCacheRestore" {
				return
			}
		case ev := <-within:
			var n struct {
				FrameID string `json:"frameId"`
			}
			if jsonv2.Unmarshal(ev, &n) == nil && n.FrameID == frame {
				return
			}
		case <-tm.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// pageLine describes the tab for a tool result.
func (u *user) pageLine(ctx context.Context, t *tab) string {
	info, err := u.info(ctx, t)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("Page URL: %s\nPage title: %s", info.URL, info.Title)
}
