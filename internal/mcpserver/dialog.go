package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Dialog-loop bounds: a dialog opening within loopGap of the previous
// one's end on the same tab continues a streak; at maxDialogStreak the
// server closes the tab, so a page looping alert() cannot trap the model.
const (
	loopGap         = 2 * time.Second
	maxDialogStreak = 5
)

// openDialog is a dialog waiting on a tab the tools drive.
type openDialog struct {
	info     DialogInfo
	answered bool // browser_handle_dialog answered it
}

// dialogOpened is the cause that ends a call when a dialog opens on one of
// the user's tabs: the call's result says so instead of timing out.
type dialogOpened struct {
	info DialogInfo
	loop int // > 0: the tab was closed after this many dialogs in a row
	url  string
	tab  target.ID
}

func (d *dialogOpened) Error() string { return "a dialog opened: " + d.info.describe() }

// result is the tool result for a call a dialog ended.
func (d *dialogOpened) result(wait time.Duration) string {
	if d.loop > 0 {
		return fmt.Sprintf("The page at %s kept opening dialogs (%d in a row, the last %s); cdpguard answered it and closed the tab so that the page cannot trap the browser. Call browser_tabs to see the open tabs; do not reopen that page.", d.url, d.loop, d.info.describe())
	}
	return fmt.Sprintf("The page opened %s. The page is paused until you answer it with browser_handle_dialog {accept: true|false, promptText?}; cdpguard dismisses it after %s without an answer. Other actions on this tab fail until then.", d.info.describe(), roundDur(wait))
}

// setCall records the running call's cancel, which a dialog opening uses.
func (u *user) setCall(stop context.CancelCauseFunc, name string) {
	u.mu.Lock()
	u.callStop, u.callName, u.ended = stop, name, nil
	u.mu.Unlock()
}

// tabOfSession returns the attached tab of session; the caller holds u.mu.
func (u *user) tabOfSession(session target.SessionID) *tab {
	for _, t := range u.evTabs {
		if t.s.ID == session {
			return t
		}
	}
	return nil
}

// dialogOpening records a dialog on a tab the tools drive and ends the
// running call; the guard's dialog handler keeps it open for
// Options.DialogWait (it dismisses it then). It runs on the guard's writer.
func (u *user) dialogOpening(session target.SessionID, d *page.EventJavascriptDialogOpening) {
	info := DialogInfo{Type: string(d.Type), Message: d.Message, DefaultPrompt: d.DefaultPrompt}
	u.mu.Lock()
	t := u.tabOfSession(session)
	if t == nil {
		u.mu.Unlock()
		return // not a tab the tools attached: the guard answers it
	}
	if t.loopClosed {
		// Closed for a dialog loop and not gone yet: answer and close again.
		p := u.evPipe
		u.mu.Unlock()
		if p != nil {
			u.closeLooping(p, session, t.id)
		}
		return
	}
	now := time.Now()
	if now.Sub(t.lastDialog) < loopGap {
		t.streak++
	} else {
		t.streak = 1
	}
	t.lastDialog = now
	t.dlg = &openDialog{info: info}
	cause := &dialogOpened{info: info, url: d.URL, tab: t.id}
	loop := t.streak >= maxDialogStreak
	if loop {
		cause.loop = t.streak
		t.dlg = nil
		t.loopClosed = true
		t.detached = true // the tools forget the tab now, not when Chrome closes it
	}
	// The running call is ended, or the next result told, under u.mu: a
	// call ends with endCall, which takes u.mu, so a cause given here is
	// one that call reads. Given after the lock (as it was), it could
	// reach a call that had just ended and be lost, and with it the
	// news that the tab was closed for its loop: the model then read "no
	// dialog is open" until its patience ran out (MCPModelTasks/dialogLoop
	// under load, 2026-12-07).
	stop := u.callStop
	if t.id != u.front && !loop {
		// A dialog in a tab the call does not act on ends nothing: a page
		// in a background tab cannot abort the model's calls. The next
		// result reports it.
		stop = nil
	}
	switch {
	case stop != nil:
		// A loop's closing is the news that matters: it replaces the
		// dialog that ended the call already (that call may still be
		// unwinding, and a second cancel's cause is dropped).
		if u.ended == nil || loop {
			u.ended = cause
		}
		stop(cause)
	case loop:
		// No call is running (a timer fired the dialog): the next call
		// tells the model.
		u.noteLocked(cause.result(u.srv.opts.DialogWait))
	default:
		u.noteLocked(fmt.Sprintf("Meanwhile the page at %s opened %s; it waits for browser_handle_dialog (select its tab first), or cdpguard dismisses it after %s.", clip(d.URL, 300), info.describe(), roundDur(u.srv.opts.DialogWait)))
	}
	p := u.evPipe
	u.mu.Unlock()
	if loop && p != nil {
		u.closeLooping(p, session, t.id)
	}
}

// endCall ends the running call's hold on dialogs and returns the dialog
// that ended it, nil when none did. After it returns no dialog ends this
// call: one opening later is told by a note (dialogOpening).
func (u *user) endCall() *dialogOpened {
	u.mu.Lock()
	defer u.mu.Unlock()
	d := u.ended
	u.callStop, u.callName, u.ended = nil, "", nil
	return d
}

// closeLooping dismisses the dialog of a tab that keeps opening them and
// closes the tab, off the guard's writer (bounded).
func (u *user) closeLooping(p *Pipe, session target.SessionID, id target.ID) {
	u.srv.goBounded(func(ctx context.Context) {
		_ = p.Call(ctx, session, page.CommandHandleJavaScriptDialog, &page.HandleJavaScriptDialogParams{Accept: false}, nil)
		_ = p.Call(ctx, "", target.CommandCloseTarget, &target.CloseTargetParams{TargetID: id}, nil)
	})
}

// dialogClosed clears a tab's dialog; one the model did not answer was
// dismissed by the guard (its wait ran out, or the page keeps opening
// dialogs), which the next result says.
func (u *user) dialogClosed(session target.SessionID, c *page.EventJavascriptDialogClosed) {
	u.mu.Lock()
	t := u.tabOfSession(session)
	if t == nil || t.dlg == nil {
		u.mu.Unlock()
		return
	}
	d := t.dlg
	t.dlg = nil
	t.lastDialog = time.Now()
	u.mu.Unlock()
	if !d.answered {
		verb := "dismissed"
		if c.Result {
			verb = "accepted"
		}
		u.note(fmt.Sprintf("cdpguard %s %s: no browser_handle_dialog came within %s (or the page opened it right after such a dismissal).", verb, d.info.describe(), roundDur(u.srv.opts.DialogWait)))
	}
}

// openDialogOf returns the dialog waiting on t, if any.
func (u *user) openDialogOf(t *tab) *openDialog {
	u.mu.Lock()
	defer u.mu.Unlock()
	return t.dlg
}

type handleDialogIn struct {
	Accept     bool   `json:"accept" jsonschema:"true to accept (OK), false to dismiss (Cancel)"`
	PromptText string `json:"promptText,omitempty" jsonschema:"the answer to a prompt dialog"`
}

func (s *Server) toolHandleDialog(ctx context.Context, u *user, in handleDialogIn) (*mcp.CallToolResult, error) {
	if len(in.PromptText) > maxText {
		return nil, fmt.Errorf("promptText is %d bytes; the limit is %d", len(in.PromptText), maxText)
	}
	if err := u.connect(ctx); err != nil {
		return nil, err
	}
	if u.cur == nil {
		// No tab is attached (a call that ran out of time renews the
		// connection): no dialog of the last tab reaches the tools until
		// it is attached again. Attach it, so that a page that keeps
		// opening dialogs, which the guard answers meanwhile, is seen and
		// closed for its loop instead of this tool saying "no dialog is
		// open" for ever. A dialog open on it (page's DialogOpenError) is
		// found below; no tab at all leaves nothing to answer.
		if _, err := u.page(ctx, false); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	// The current tab's dialog first, then any other tab's.
	var t *tab
	var d *openDialog
	u.mu.Lock()
	if u.cur != nil && u.cur.dlg != nil {
		t, d = u.cur, u.cur.dlg
	}
	for _, et := range u.evTabs {
		if d == nil && et.dlg != nil {
			t, d = et, et.dlg
		}
	}
	if d != nil {
		d.answered = true
	}
	u.mu.Unlock()
	if d == nil {
		return nil, errors.New("no dialog is open (an earlier one may have been answered or dismissed already)")
	}
	u.cur = t
	verb := "Dismissed"
	if in.Accept {
		verb = "Accepted"
	}
	u.note(fmt.Sprintf("%s %s.", verb, d.info.describe()))
	err := u.whileNavigatingFor(ctx, t, quietWait, func() error {
		return t.s.Call(ctx, page.CommandHandleJavaScriptDialog, &page.HandleJavaScriptDialogParams{Accept: in.Accept, PromptText: in.PromptText}, nil)
	})
	if err != nil {
		u.mu.Lock()
		d.answered = false
		u.mu.Unlock()
		return nil, fmt.Errorf("answering the dialog failed: %w", err)
	}
	line, err := u.pageLine(ctx, t)
	if err != nil {
		return nil, err
	}
	return textResult(line), nil
}
