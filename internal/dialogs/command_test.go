package dialogs

import (
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// TestGraceOf: Config.DialogGrace zero is the one default, negative is
// "answer at once".
func TestGraceOf(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{0: DefaultGrace, -1: 0, 5 * time.Second: 5 * time.Second} {
		if got := GraceOf(in); got != want {
			t.Errorf("GraceOf(%v) = %v, want %v", in, got, want)
		}
	}
}

// TestCommand: the dialog rows of the firewall table as an agent's
// commands reach the handler: Page.enable makes the agent a listener (its
// session's target asked once), its answer claims the dialog, a late
// answer is told the truth, and Page.disable or a detach ends listening.
func TestCommand(t *testing.T) {
	r := &rec{}
	h := New(r, testPages, time.Hour, nil)
	defer h.Close()
	agent := new(int)
	h.Attach("S1", "T1")
	asked := 0
	target := func() string { asked++; return "T1" }
	cmd := relay.Command{SessionID: "A1"}
	if v := h.Command(t.Context(), agent, "agent", cmd, firewall.DialogsListen, target); v.Refuse != "" || v.OnReply != nil || asked != 1 {
		t.Fatalf("listen: %+v, target asked %d times", v, asked)
	}
	h.Opening("S1", ev("confirm"))
	if r.n() != 0 {
		t.Fatal("the guard answered a dialog a listening agent may answer")
	}
	v := h.Command(t.Context(), agent, "agent", cmd, firewall.DialogsAnswer, target)
	if v.OnReply == nil {
		t.Fatal("the agent's answer did not claim the dialog")
	}
	v.OnReply([]byte(`{}`), nil)
	h.Closed("S1")
	// A late answer: nobody's dialog is open; Chrome's error is replaced.
	if v := h.Command(t.Context(), agent, "agent", cmd, firewall.DialogsAnswer, target); v.OnReply != nil {
		if _, errRaw := v.OnReply(nil, []byte(`{"code":-32000,"message":"No dialog is showing"}`)); strings.Contains(string(errRaw), "No dialog is showing") {
			t.Errorf("a late answer was not told the truth: %s", errRaw)
		}
	}
	// A detach of the agent's session ends listening: the guard answers.
	h.Command(t.Context(), agent, "agent", relay.Command{Params: []byte(`{"sessionId":"A1"}`)}, firewall.Detach, target)
	h.Opening("S1", ev("alert"))
	if r.n() != 1 {
		t.Fatalf("after the agent detached, %d answers by the guard; want 1", r.n())
	}
	if asked != 1 {
		t.Fatalf("the target was asked %d times; want once, at listen", asked)
	}
}
