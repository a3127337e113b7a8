package dialogs

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// listenedAlert is a page T1 (the guard's session S1) stuck behind an
// alert while its navigation to /next is ready to commit, and an agent
// listening on it (session A1) with an hour's grace to answer.
func listenedAlert() (*Handler, *chrome, any) {
	c := &chrome{}
	h := New(&rec{}, testPages, time.Hour, nil)
	h.SetCaller(c)
	agent := &tree{}
	h.Attach("S1", "T1")
	h.Listen(agent, "A1", "T1", true)
	h.Navigating("S1", navigating("T1", "http://a.test/next", "differentDocument"))
	c.stuck = true
	h.Opening("S1", ev("alert"))
	return h, c, agent
}

// tree is an agent whose page session A1 on T1 was attached by its
// browser-level session B1 (as *relay.Agent's Leaving reports it).
type tree struct{}

func (*tree) Leaving(on, sessionID, targetID string) []string {
	switch {
	case sessionID == "B1":
		return []string{"B1", "A1"}
	case sessionID != "":
		return []string{sessionID}
	case targetID == "T1" && on == "B1":
		return []string{"A1"}
	}
	return nil
}

// TestSettleBeforeLeaving: an agent listening on a page stuck behind an
// alert (its grace running) detaches (the page's session, by the page's
// target id, or the browser-level session that attached it), switches
// auto-attach off, sends Page.disable, or hangs up,
// which crashed Chromium 156 for every user
// (docs/decisions/2026-12-02-beforeunload.md). The guard first answers the
// alert, finds the page stuck, navigates it again, and lets the agent's
// command go on only once Chrome closed the dialog; without Chrome's word
// it gives up after settleWait. A page with no open dialog is not waited on.
func TestSettleBeforeLeaving(t *testing.T) {
	leave := map[string]func(ctx context.Context, h *Handler, agent any){
		"detach": func(ctx context.Context, h *Handler, agent any) {
			h.Command(ctx, agent, "agent", relay.Command{Params: []byte(`{"sessionId":"A1"}`)}, firewall.Detach, nil)
		},
		"detachParent": func(ctx context.Context, h *Handler, agent any) {
			h.Command(ctx, agent, "agent", relay.Command{Params: []byte(`{"sessionId":"B1"}`)}, firewall.Detach, nil)
		},
		"detachByTarget": func(ctx context.Context, h *Handler, agent any) {
			h.Command(ctx, agent, "agent", relay.Command{SessionID: "B1", Params: []byte(`{"targetId":"T1"}`)}, firewall.Detach, nil)
		},
		"autoAttachOff": func(ctx context.Context, h *Handler, agent any) {
			h.Command(ctx, agent, "agent", relay.Command{SessionID: "B1", Params: []byte(`{"autoAttach":false,"waitForDebuggerOnStart":false}`)}, firewall.AutoAttach, nil)
		},
		"pageDisable": func(ctx context.Context, h *Handler, agent any) {
			h.Command(ctx, agent, "agent", relay.Command{SessionID: "A1"}, firewall.DialogsUnlisten, nil)
		},
		"hangUp": func(ctx context.Context, h *Handler, agent any) { h.SettleOwner(ctx, agent) },
	}
	for name, do := range leave {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, c, agent := listenedAlert()
				done := make(chan struct{})
				go func() { defer close(done); do(t.Context(), h, agent) }()
				synctest.Wait()
				want := []string{"Page.handleJavaScriptDialog", "Page.navigate http://a.test/next"}
				if got := c.got(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
					t.Fatalf("calls %q, want %q", got, want)
				}
				select {
				case <-done:
					t.Fatal("the agent's command went on before Chrome closed the dialog")
				default:
				}
				h.Closed("S1") // the navigation closed the old document's dialog
				time.Sleep(settleTick)
				synctest.Wait()
				select {
				case <-done:
				default:
					t.Fatal("the agent's command still waits after the dialog closed")
				}
				// No dialog open: nothing to wait for.
				h.Listen(agent, "A1", "T1", true)
				start := time.Now()
				do(t.Context(), h, agent)
				if d := time.Since(start); d != 0 {
					t.Errorf("leaving a page with no open dialog waited %v", d)
				}
				h.Close()
			})
		})
	}
}

// TestAutoAttachOnSettlesNothing: switching auto-attach on (no filter)
// ends no session, so an open dialog keeps its grace for its agent.
func TestAutoAttachOnSettlesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c, agent := listenedAlert()
		h.Command(t.Context(), agent, "agent", relay.Command{SessionID: "B1", Params: []byte(`{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}`)}, firewall.AutoAttach, nil)
		if got := c.got(); len(got) != 0 {
			t.Errorf("calls %q, want none", got)
		}
		h.Close()
	})
}

// TestSettleBounded: a dialog Chrome never says closed holds the agent's
// hang-up for settleWait, no longer.
func TestSettleBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c, agent := listenedAlert()
		start := time.Now()
		h.SettleOwner(t.Context(), agent)
		if d := time.Since(start); d < settleWait || d > settleWait+settleTick {
			t.Errorf("waited %v, want %v", d, settleWait)
		}
		if got := c.got(); len(got) != 2 || got[0] != "Page.handleJavaScriptDialog" {
			t.Errorf("calls %q, want the guard's answer and its navigation", got)
		}
		h.Close()
	})
}
