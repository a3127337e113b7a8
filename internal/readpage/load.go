package readpage

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/reader"
	"github.com/cdpguard/cdpguard/js"
)

// searchNote is put on top of pages under Deps.SearchURL.
const searchNote = "this is a search results page. Search results are not a source: take facts and numbers only from pages opened with read, and name what is missing instead of filling it in."

// loadPoll is how often the reader looks whether a page it navigated has
// loaded.
const loadPoll = 50 * time.Millisecond

// readTarget navigates a page to p.URL when given (waiting for the load,
// bounded), reads its rendered DOM in the reader's isolated world and
// returns the requested section of its text.
func (r *Reader) readTarget(ctx context.Context, targetID string, p Params) (Result, error) {
	if p.Offset < 0 || p.MaxChars < 0 {
		return Result{}, fmt.Errorf("offset and maxChars must not be negative")
	}
	session := r.session(targetID)
	if session == "" {
		return Result{}, fmt.Errorf("the guard has no session on page %s", targetID)
	}
	var notes []string
	loaded := true
	if p.URL != "" {
		if msg := r.pageRefusal(targetID, p.URL); msg != "" {
			return Result{}, fmt.Errorf("%w: %s", ErrRefused, msg)
		}
		var err error
		if loaded, err = r.navigateAndWait(ctx, session, p.URL); err != nil {
			return Result{}, err
		}
		if !loaded {
			notes = append(notes, fmt.Sprintf("the page had not finished loading after %s; this is what had rendered by then.", r.d.LoadTimeout))
		}
	}
	if loaded { // a page that did not load in its bound gets no further wait
		if _, err := r.settle(ctx, session, p.URL != ""); err != nil {
			return Result{}, err
		}
	}
	page, body, more, err := r.snapshot(ctx, session)
	if err != nil {
		return Result{}, err
	}
	notes = append(notes, more...)
	if s := r.d.SearchURL; s != "" && strings.HasPrefix(page.URL, s) {
		notes = append(notes, searchNote)
	}
	sec, err := reader.Cut(reader.Compose(page.URL, page.Title, notes, body), p.Offset, p.MaxChars)
	if err != nil {
		return Result{}, err
	}
	out := Result{URL: page.URL, Title: page.Title, Text: sec.Text, Offset: sec.Offset, TotalChars: sec.TotalChars}
	if sec.NextOffset > 0 {
		next := sec.NextOffset
		out.NextOffset = &next
	}
	return out, nil
}

// navigateAndWait navigates the page on the guard's session and waits until
// the new document's readyState is "complete", at most the load bound.
// loaded is false when the bound ran out first.
func (r *Reader) navigateAndWait(ctx context.Context, session, url string) (loaded bool, err error) {
	res, err := r.d.Browser.Call(ctx, session, "Page.navigate", map[string]any{"url": url})
	if err != nil {
		return false, fmt.Errorf("navigate: %w", err)
	}
	var nav struct {
		LoaderID  string `json:"loaderId"`
		ErrorText string `json:"errorText"`
	}
	if err := cdpmsg.UnmarshalBrowser(res, &nav); err != nil {
		return false, fmt.Errorf("navigate: %w", err)
	}
	if nav.ErrorText != "" {
		return false, fmt.Errorf("navigate to %s: %s", clip.String(url), nav.ErrorText)
	}
	deadline := time.NewTimer(r.d.LoadTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(loadPoll)
	defer tick.Stop()
	for {
		frame, err := r.mainFrame(ctx, session)
		if err != nil {
			return false, err
		}
		if nav.LoaderID == "" || frame.LoaderID == nav.LoaderID {
			var state string
			if err := r.inWorld(ctx, session, frame.ID, "Runtime.evaluate", map[string]any{"expression": js.ReadyState}, &state); err == nil && state == "complete" {
				return true, nil
			}
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-deadline.C:
			return false, nil
		case <-tick.C:
		}
	}
}

type frameInfo struct {
	ID       string `json:"id"`
	LoaderID string `json:"loaderId"`
}

// mainFrame returns the page's main frame.
func (r *Reader) mainFrame(ctx context.Context, session string) (frameInfo, error) {
	res, err := r.d.Browser.Call(ctx, session, "Page.getFrameTree", nil)
	if err != nil {
		return frameInfo{}, fmt.Errorf("frame tree: %w", err)
	}
	var t struct {
		FrameTree struct {
			Frame frameInfo `json:"frame"`
		} `json:"frameTree"`
	}
	if err := cdpmsg.UnmarshalBrowser(res, &t); err != nil {
		return frameInfo{}, fmt.Errorf("frame tree: %w", err)
	}
	return t.FrameTree.Frame, nil
}
