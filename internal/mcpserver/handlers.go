package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/js"
)

func (s *Server) toolNavigate(ctx context.Context, u *user, in navigateIn) (*mcp.CallToolResult, error) {
	if err := s.checkURL(u.key, in.URL); err != nil {
		return nil, err
	}
	t, err := u.page(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := u.navigate(ctx, t, in.URL); err != nil {
		return nil, err
	}
	return textResult(u.pageLine(ctx, t) + "\nThe page is open. Read it with browser_read (no url needed now), or call browser_snapshot for element refs."), nil
}

func (s *Server) toolBack(ctx context.Context, u *user, _ noIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	h, err := cdp.Call(ctx, t.s, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		return nil, err
	}
	if h.CurrentIndex <= 0 || int(h.CurrentIndex) > len(h.Entries)-1 {
		return nil, errors.New("there is no previous page in this tab")
	}
	prev := h.Entries[h.CurrentIndex-1]
	err = u.whileNavigating(ctx, t, func() error {
		return call0(ctx, t.s, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: prev.ID})
	})
	u.snap = nil
	if err != nil {
		return nil, err
	}
	return textResult(u.pageLine(ctx, t)), nil
}

// readResult is Guard.read's result (the reader's contract).
type readResult struct {
	URL        string `json:"url"`
	Title      string `json:"title"`
	Text       string `json:"text"`
	Offset     int    `json:"offset"`
	NextOffset *int   `json:"nextOffset,omitempty"`
	TotalChars int    `json:"totalChars"`
}

func (s *Server) toolRead(ctx context.Context, u *user, in readIn) (*mcp.CallToolResult, error) {
	if in.URL != "" {
		if err := s.checkURL(u.key, in.URL); err != nil {
			return nil, err
		}
	}
	if in.Offset < 0 {
		return nil, errors.New("offset must be 0 or more")
	}
	t, err := u.page(ctx, in.URL != "")
	if err != nil {
		return nil, err
	}
	params := map[string]any{"offset": in.Offset, "maxChars": readSection}
	if in.URL != "" {
		params["url"] = in.URL
		u.snap = nil
	}
	var r readResult
	err = t.s.Call(ctx, "Guard.read", params, &r)
	if err != nil {
		return nil, s.explain(u.key, in.URL, err)
	}
	if in.URL != "" {
		if err := u.checkLanded(ctx, t, in.URL); err != nil {
			return nil, err
		}
	}
	end := r.Offset + len([]rune(r.Text))
	// The reader's text starts with its title and URL; a later section
	// does not, so name the page there.
	head := fmt.Sprintf("Characters %d-%d of %d.", r.Offset, end, r.TotalChars)
	if r.Offset > 0 {
		head = fmt.Sprintf("URL: %s\nTitle: %s\n", r.URL, r.Title) + head
	}
	if r.NextOffset != nil {
		head += fmt.Sprintf(" More follows: call browser_read with offset=%d (no url) to continue.", *r.NextOffset)
	}
	return textResult(head + "\n\n" + r.Text), nil
}

func (s *Server) toolSnapshot(ctx context.Context, u *user, _ noIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	out, err := u.takeSnapshot(ctx, t)
	if err != nil {
		return nil, err
	}
	return textResult(u.pageLine(ctx, t) + "\n\n" + out), nil
}

// onElement prepares ref's element and runs act on it while watching for a
// navigation it starts.
func (s *Server) onElement(ctx context.Context, u *user, ref string, needEnabled bool, window time.Duration, act func(t *tab, el *element) error) (*mcp.CallToolResult, error) {
	if len(ref) > 40 {
		return nil, errors.New("ref is too long; use a ref shown as [ref=eN] by browser_snapshot")
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	el, err := u.prepare(ctx, t, ref, needEnabled)
	if err != nil {
		return nil, err
	}
	err = u.whileNavigatingFor(ctx, t, window, func() error { return act(t, el) })
	u.release(ctx, t)
	if err != nil {
		return nil, err
	}
	return textResult(u.pageLine(ctx, t)), nil
}

func (s *Server) toolClick(ctx context.Context, u *user, in clickIn) (*mcp.CallToolResult, error) {
	return s.onElement(ctx, u, in.Ref, true, startedWait, func(t *tab, el *element) error {
		return u.click(ctx, t, el, in.Button, in.DoubleClick)
	})
}

func (s *Server) toolHover(ctx context.Context, u *user, in refIn) (*mcp.CallToolResult, error) {
	return s.onElement(ctx, u, in.Ref, false, quietWait, func(t *tab, el *element) error {
		return mouse(ctx, t, "mouseMoved", el, "none", 0)
	})
}

func (s *Server) toolType(ctx context.Context, u *user, in typeIn) (*mcp.CallToolResult, error) {
	if len(in.Text) > maxText {
		return nil, fmt.Errorf("text is %d bytes; the limit is %d", len(in.Text), maxText)
	}
	window := quietWait
	if in.Submit {
		window = startedWait
	}
	return s.onElement(ctx, u, in.Ref, true, window, func(t *tab, el *element) error {
		if err := u.typeText(ctx, t, el, in.Text); err != nil {
			return err
		}
		if in.Submit {
			return u.pressKey(ctx, t, "Enter")
		}
		return nil
	})
}

func (s *Server) toolSelect(ctx context.Context, u *user, in selectIn) (*mcp.CallToolResult, error) {
	if len(in.Values) == 0 || len(in.Values) > 100 {
		return nil, errors.New("values must list 1 to 100 option values or labels")
	}
	var picked []string
	res, err := s.onElement(ctx, u, in.Ref, true, quietWait, func(t *tab, el *element) error {
		var r struct {
			Picked []string `json:"picked"`
			Error  string   `json:"error"`
		}
		if err := callOn(ctx, t, el.obj, js.MCPSelect, []any{in.Values}, &r); err != nil {
			return err
		}
		if r.Error != "" {
			return errors.New(r.Error)
		}
		picked = r.Picked
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: "Selected: " + strings.Join(picked, ", ")})
	return res, nil
}

func (s *Server) toolKey(ctx context.Context, u *user, in keyIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	if err := u.whileNavigating(ctx, t, func() error { return u.pressKey(ctx, t, in.Key) }); err != nil {
		return nil, err
	}
	return textResult(u.pageLine(ctx, t)), nil
}

func (s *Server) toolWait(ctx context.Context, u *user, in waitIn) (*mcp.CallToolResult, error) {
	if in.Time < 0 || in.Time > 30 {
		return nil, errors.New("time must be between 0 and 30 seconds")
	}
	if in.Text == "" && in.TextGone == "" {
		if in.Time == 0 {
			return nil, errors.New("give text, textGone or time")
		}
		select {
		case <-time.After(time.Duration(in.Time * float64(time.Second))):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return textResult(fmt.Sprintf("Waited %g s.", in.Time)), nil
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	limit := 10 * time.Second
	if in.Time > 0 {
		limit = time.Duration(in.Time * float64(time.Second))
	}
	deadline := time.Now().Add(limit)
	for {
		text, err := pageText(ctx, t)
		if err == nil && (in.Text == "" || strings.Contains(text, in.Text)) && (in.TextGone == "" || !strings.Contains(text, in.TextGone)) {
			return textResult("The condition holds."), nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the condition did not hold within %s", limit)
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *Server) toolTabs(ctx context.Context, u *user, in tabsIn) (*mcp.CallToolResult, error) {
	if err := u.connect(ctx); err != nil {
		return nil, err
	}
	ps, err := u.pages(ctx)
	if err != nil {
		return nil, err
	}
	pick := func() (*target.Info, error) {
		if in.Index == nil {
			return nil, errors.New("give index (from browser_tabs list)")
		}
		if *in.Index < 0 || *in.Index >= len(ps) {
			return nil, fmt.Errorf("there is no tab %d; there are %d tabs (0 to %d)", *in.Index, len(ps), len(ps)-1)
		}
		return ps[*in.Index], nil
	}
	switch in.Action {
	case "list":
	case "new":
		if _, err := u.newTab(ctx); err != nil {
			return nil, err
		}
	case "select":
		p, err := pick()
		if err != nil {
			return nil, err
		}
		if _, err := u.attach(ctx, string(p.TargetID)); err != nil {
			return nil, err
		}
		_ = call0(ctx, Session{p: u.pipe}, target.ActivateTarget, target.ActivateTargetParams{TargetID: p.TargetID})
	case "close":
		id := ""
		if in.Index == nil && u.cur != nil {
			id = u.cur.id
		} else {
			p, err := pick()
			if err != nil {
				return nil, err
			}
			id = string(p.TargetID)
		}
		if err := call0(ctx, Session{p: u.pipe}, target.CloseTarget, target.CloseTargetParams{TargetID: target.ID(id)}); err != nil {
			return nil, err
		}
		u.forget(id)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if ps, err = u.pages(ctx); err != nil || !hasTarget(ps, id) {
				break // closing is asynchronous in Chrome
			}
		}
	default:
		return nil, fmt.Errorf("action %q is not one of list, new, select, close", clip(in.Action, 20))
	}
	if ps, err = u.pages(ctx); err != nil {
		return nil, err
	}
	var b strings.Builder
	if len(ps) == 0 {
		b.WriteString("No tabs are open.")
	}
	for i, p := range ps {
		mark := " "
		if u.cur != nil && u.cur.id == string(p.TargetID) {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %d: %s (%s)\n", mark, i, p.Title, p.URL)
	}
	return textResult(strings.TrimRight(b.String(), "\n")), nil
}

func (s *Server) toolScreenshot(ctx context.Context, u *user, in screenshotIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	p := page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng}
	if in.FullPage {
		m, err := cdp.Call(ctx, t.s, page.GetLayoutMetrics, cdp.Empty{})
		if err == nil && m.CSSContentSize != nil {
			p.Clip = &page.Viewport{Width: min(m.CSSContentSize.Width, 4096), Height: min(m.CSSContentSize.Height, 16384), Scale: 1}
			p.CaptureBeyondViewport = ptr(true)
		}
	}
	res, err := cdp.Call(ctx, t.s, page.CaptureScreenshot, p)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: res.Data, MIMEType: "image/png"}}}, nil
}

func (s *Server) toolConsole(ctx context.Context, u *user, _ noIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	lines := append([]string(nil), t.console...)
	u.mu.Unlock()
	if len(lines) == 0 {
		return textResult("No console messages."), nil
	}
	return textResult(strings.Join(lines, "\n")), nil
}

func (s *Server) toolEvaluate(ctx context.Context, u *user, in evaluateIn) (*mcp.CallToolResult, error) {
	if strings.TrimSpace(in.Function) == "" || len(in.Function) > maxFunction {
		return nil, fmt.Errorf("function must be a JavaScript function of at most %d bytes, like () => document.title", maxFunction)
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	doc, err := documentObject(ctx, t)
	if err != nil {
		return nil, err
	}
	defer u.release(ctx, t)
	res, err := cdp.Call(ctx, t.s, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: in.Function, ObjectID: doc, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
	})
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, fmt.Errorf("the function threw: %s", exceptionText(res.ExceptionDetails))
	}
	out := "undefined"
	if res.Result != nil && len(res.Result.Value) > 0 {
		out = string(res.Result.Value)
	} else if res.Result != nil && res.Result.Description != "" {
		out = res.Result.Description
	}
	return textResult(clip(out, readSection)), nil
}

func (s *Server) toolClose(ctx context.Context, u *user, _ noIn) (*mcp.CallToolResult, error) {
	u.disconnect()
	msg, err := s.opts.Backend.Dispose(ctx, u.key)
	if err != nil {
		return nil, err
	}
	return textResult(msg), nil
}

func (s *Server) toolUpload(ctx context.Context, u *user, in uploadIn) (*mcp.CallToolResult, error) {
	if len(in.Paths) == 0 || len(in.Paths) > 20 {
		return nil, errors.New("paths must list 1 to 20 files")
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	id, err := u.resolveRef(ctx, t, in.Ref)
	if err != nil {
		return nil, err
	}
	if err := call0(ctx, t.s, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: in.Paths, BackendNodeID: id}); err != nil {
		return nil, err
	}
	return textResult("Files set."), nil
}

func hasTarget(ps []*target.Info, id string) bool {
	for _, p := range ps {
		if string(p.TargetID) == id {
			return true
		}
	}
	return false
}
