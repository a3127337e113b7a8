package dialogs

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// TestListenInEventOrder: an agent's Page.enable on a new page, in each
// order the browser connection's read loop can see it, is a listener of
// the page's first dialog. The guard discovers targets
// (Target.setDiscoverTargets at start), and Chrome reports a target's
// creation to every discovering session before any session attaches to it
// (Target.targetCreated, then Target.attachedToTarget: seen for
// Target.createTarget and window.open with an agent's browser session
// auto-attaching, the guard's events first each time); the read loop
// handles the guard's event (the registry's Track) before it reads the
// next message, so an agent learns a target's id, and sends Page.enable on
// it, only after the registry heard of it. The agent's attach may come
// before or after the guard's own (attachedToTarget on the root session,
// the registry's Attached and the handler's Attach). Listen drops a
// listener of a target the registry never heard of (no page holds it);
// by that order such a target is one already dropped after pages.Keep,
// which opens no dialog.
func TestListenInEventOrder(t *testing.T) {
	for _, agentFirst := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			reg := pages.New()
			r := &rec{}
			h := New(r, reg, time.Hour, nil)
			defer h.Close()
			owner := new(int)
			reg.Track("T", "C") // Target.targetCreated on the guard's discovery
			guardAttach := func() {
				reg.Attached("T", "S")
				h.Attach("S", "T")
			}
			if !agentFirst {
				guardAttach()
			}
			h.Listen(owner, "A", "T", true) // the agent's Page.enable
			if agentFirst {
				guardAttach()
			}
			h.Opening("S", ev("alert"))
			time.Sleep(time.Hour - time.Second)
			synctest.Wait()
			if r.n() != 0 {
				t.Fatalf("agent first %v: the guard answered within the grace, as if nobody listened: %v", agentFirst, r.got)
			}
			done, late := h.Claim(owner, "A")
			if done == nil || late != "" {
				t.Fatalf("agent first %v: the agent's answer is not its own (late %q)", agentFirst, late)
			}
			done(true)
		})
	}
}
