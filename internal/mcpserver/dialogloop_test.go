package mcpserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"
)

// loopDialogs opens n dialogs in a row on session, each closed at once,
// as a page looping alert() does when the guard answers them.
func loopDialogs(u *user, session target.SessionID, n int) {
	for range n {
		u.onEvent(session, &page.EventJavascriptDialogOpening{Type: page.DialogTypeAlert, Message: "loop", URL: "http://ok.test/loop"})
		u.onEvent(session, &page.EventJavascriptDialogClosed{})
	}
}

// TestLoopReportedOnce: the tools' closing of a tab for its dialog loop
// reaches the model once, whether the call is running, is still unwinding
// after an earlier dialog ended it, or has just ended. It was lost in the
// second and third cases (the cause of a context already cancelled is
// dropped; a cause given after the call's end reaches nobody), and the
// model then read "no dialog is open" with no word of the closed tab
// (MCPModelTasks/dialogLoop under load).
func TestLoopReportedOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		before  int  // dialogs before the call ends
		running bool // the call is still running at the loop's last dialog
	}{
		{"running", 0, true},
		{"unwinding after an earlier dialog", maxDialogStreak - 1, true},
		{"just ended", maxDialogStreak - 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			u := newUser(&Server{}, "k")
			u.tabs["T1"] = &tab{id: "T1", s: Session{ID: "S1"}}
			u.evTabs = append(u.evTabs, u.tabs["T1"])
			u.front = "T1"
			cctx, stop := context.WithCancelCause(context.Background())
			defer stop(nil)
			u.setCall(stop, "browser_handle_dialog")
			loopDialogs(u, "S1", c.before)
			var ended *dialogOpened
			if !c.running {
				ended = u.endCall()
			}
			loopDialogs(u, "S1", maxDialogStreak-c.before)
			if c.running {
				if cctx.Err() == nil {
					t.Fatal("the running call was not ended by the dialogs")
				}
				ended = u.endCall()
			}
			notes := strings.Join(u.takeNotes(), "\n")
			told := 0
			if ended != nil && ended.loop > 0 {
				told++
			}
			told += strings.Count(notes, "closed the tab")
			if told != 1 {
				t.Fatalf("the loop's closing was told %d times; call ended by %+v, notes %q", told, ended, notes)
			}
		})
	}
}

// TestHandleDialogAttachesAfterReconnect: after a call that ran out of time
// renewed the connection, no tab is attached; browser_handle_dialog attaches
// the last tab again, so that a page that keeps opening dialogs (answered by
// the guard meanwhile) is seen and its tab closed for the loop. Without it,
// every browser_handle_dialog said "no dialog is open" while the page looped.
func TestHandleDialogAttachesAfterReconnect(t *testing.T) {
	fb := &fakeBrowser{noHang: true}
	s := New(Options{Backend: fb})
	defer func() { s.cancel(); s.wg.Wait(); fb.wg.Wait() }()
	u := newUser(s, "k")
	defer u.reset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u.curID = "T1" // the tab of the call before the reconnect
	_, err := s.toolHandleDialog(ctx, u, handleDialogIn{Accept: true})
	if err == nil || !strings.Contains(err.Error(), "no dialog is open") {
		t.Fatalf("browser_handle_dialog with no dialog: %v", err)
	}
	if u.cur == nil || u.cur.id != "T1" {
		t.Fatalf("the last tab is not attached again: %+v", u.cur)
	}
	loopDialogs(u, u.cur.s.ID, maxDialogStreak)
	if notes := strings.Join(u.takeNotes(), "\n"); !strings.Contains(notes, "kept opening dialogs") || !strings.Contains(notes, "closed the tab") {
		t.Fatalf("the looping tab's dialogs did not reach the tools; notes %q", notes)
	}
}
