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
)

func (s *Server) toolNavigate(ctx context.Context, u *user, in navigateIn) (*mcp.CallToolResult, error) {
	if err := s.checkURL(u.key, in.URL); err != nil {
		return nil, err
	}
	t, err := u.page(ctx, true)
	if err != nil {
		return nil, err
	}
	if err := u.navigate(ctx, t, in.URL, 0); err != nil {
		return nil, err
	}
	line, err := u.pageLine(ctx, t)
	if err != nil {
		return nil, err
	}
	return textResult(line + "\nThe page is open. Read it with browser_read (no url needed now), or call browser_snapshot for element refs."), nil
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
	return u.actionResult(ctx, t)
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
	var note string
	if in.URL != "" {
		// The tools open the page (typed errors: blocked, timeout, load
		// failure); a page still loading after half the call's bound is
		// read as it is, with a note.
		err := u.navigate(ctx, t, in.URL, s.opts.CallTimeout/2)
		if errors.Is(err, errStillLoading) {
			note = "\n(The page had not finished loading; this is what it showed. browser_read again may show more.)"
		} else if err != nil {
			return nil, err
		}
	}
	u.doing = "reading the page"
	u.hint = "call browser_read again, or browser_snapshot"
	var r readResult
	err = t.s.Call(ctx, "Guard.read", map[string]any{"offset": in.Offset, "maxChars": readSection}, &r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, &PageError{Msg: fmt.Sprintf("reading the page failed: %v", err), Err: err}
	}
	u.doing, u.hint = "", ""
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
	return textResult(head + note + sparse(r) + "\n\n" + r.Text), nil
}

// sparse is the hint for a page that shows almost no text (it may render
// by script).
func sparse(r readResult) string {
	if r.Offset > 0 || r.TotalChars > 300 {
		return ""
	}
	return "\n(The page shows almost no text: it may render by script. Call browser_wait_for {text: \"…\"} with a word you expect, then browser_read again.)"
}

func (s *Server) toolSnapshot(ctx context.Context, u *user, in snapshotIn) (*mcp.CallToolResult, error) {
	if in.Depth < 0 {
		return nil, errors.New("depth must be 1 or more (omit it for the whole tree)")
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	line, err := u.pageLine(ctx, t)
	if err != nil {
		return nil, err
	}
	o := snapOpts{depth: in.Depth, boxes: in.Boxes}
	if in.Target != "" {
		if o.root, err = u.resolveTarget(ctx, t, in.Target); err != nil {
			return nil, err
		}
		o.rootName = in.Target
	}
	out, err := u.snapshotWith(ctx, t, o)
	if err != nil {
		return nil, err
	}
	return textResult(line + "\n\n" + out + ignoredFile(in.Filename)), nil
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
	u.doing = "waiting for the text"
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

// consoleRanks orders console levels by severity: a level shows its own
// messages and the more severe ones, as @playwright/mcp's level does.
var consoleRanks = map[string]int{"error": 0, "warning": 1, "info": 2, "debug": 3}

// consoleLevel maps a console API call's type to its level.
func consoleLevel(typ string) string {
	switch typ {
	case "error", "assert":
		return "error"
	case "warning":
		return "warning"
	case "debug":
		return "debug"
	}
	return "info"
}

func (s *Server) toolConsole(ctx context.Context, u *user, in consoleIn) (*mcp.CallToolResult, error) {
	level := in.Level
	if level == "" {
		level = "info"
	}
	rank, ok := consoleRanks[level]
	if !ok {
		return nil, fmt.Errorf("level %q is not one of error, warning, info, debug", clip(level, 20))
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	var lines []string
	hidden := 0
	for _, l := range t.console {
		switch {
		case consoleRanks[l.level] > rank:
		case !in.All && l.gen < t.gen:
			hidden++
		default:
			lines = append(lines, l.text)
		}
	}
	u.mu.Unlock()
	var more string
	if hidden > 0 {
		more = fmt.Sprintf("\n(%d message(s) from before the last navigation not shown; pass all: true.)", hidden)
	}
	if len(lines) == 0 {
		return textResult(fmt.Sprintf("No console messages at level %s or more severe.", level) + more + ignoredFile(in.Filename)), nil
	}
	return textResult(strings.Join(lines, "\n") + more + ignoredFile(in.Filename)), nil
}

// isFunction reports whether src looks like a function rather than an
// expression: browser_evaluate takes either.
func isFunction(src string) bool {
	s := strings.TrimSpace(src)
	if strings.HasPrefix(s, "function") || strings.HasPrefix(s, "async ") {
		return true
	}
	if i := strings.Index(s, "=>"); i > 0 {
		head := strings.TrimSpace(s[:i])
		return strings.HasPrefix(head, "(") && strings.HasSuffix(head, ")") || !strings.ContainsAny(head, " ()[]{}.;'\"`")
	}
	return false
}

func (s *Server) toolEvaluate(ctx context.Context, u *user, in evaluateIn) (*mcp.CallToolResult, error) {
	src := in.Function
	if src == "" {
		src = in.Expression
	}
	if strings.TrimSpace(src) == "" || len(src) > maxFunction {
		return nil, fmt.Errorf("give function (like () => document.title) or expression (like document.title) of at most %d bytes", maxFunction)
	}
	if !isFunction(src) {
		// An expression, evaluated as the body of a function, so that both
		// run the same way (on the page's document, promises awaited).
		src = "function (element) { return (\n" + src + "\n); }"
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	this, err := documentObject(ctx, t)
	if err != nil {
		return nil, err
	}
	defer u.release(ctx, t)
	var args []*runtime.CallArgument
	if in.Target != "" {
		// The function gets the element as its argument (and as this),
		// as @playwright/mcp's (element) => ... does.
		if this, err = u.elementObject(ctx, t, in.Target); err != nil {
			return nil, err
		}
		args = []*runtime.CallArgument{{ObjectID: this}}
	}
	var res runtime.CallFunctionOnResult
	err = u.whileNavigatingFor(ctx, t, 0, func() error {
		var err error
		res, err = cdp.Call(ctx, t.s, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
			FunctionDeclaration: src, ObjectID: this, Arguments: args, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, &PageError{Msg: "the script threw: " + exceptionText(res.ExceptionDetails)}
	}
	out := "undefined"
	if res.Result != nil && len(res.Result.Value) > 0 {
		out = string(res.Result.Value)
	} else if res.Result != nil && res.Result.Description != "" {
		out = res.Result.Description
	}
	text := cut(out, readSection) + ignoredFile(in.Filename)
	if pop, err := u.takePopups(ctx); err == nil && pop != "" {
		text += "\n" + pop
	}
	return textResult(text), nil
}

// cut clips s to n characters and says how many were left out.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + fmt.Sprintf("\n… (cut: %d more characters were left out of %d)", len(r)-n, len(r))
}

func (s *Server) toolClose(ctx context.Context, u *user, _ noIn) (*mcp.CallToolResult, error) {
	u.disconnect()
	u.curID, u.order = "", nil
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
	target := in.target()
	if target == "" {
		// @playwright/mcp's upload answers the file chooser a click
		// opened; here it sets the page's file input.
		target = "input[type=file]"
	}
	id, err := u.resolveTarget(ctx, t, target)
	if err != nil {
		return nil, err
	}
	if err := call0(ctx, t.s, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: in.Paths, BackendNodeID: id}); err != nil {
		return nil, err
	}
	return textResult(fmt.Sprintf("Set %d file(s) on %s.", len(in.Paths), clip(target, 100))), nil
}

func hasTarget(ps []*target.Info, id target.ID) bool {
	for _, p := range ps {
		if p.TargetID == id {
			return true
		}
	}
	return false
}
