package relay

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// TestEvictTellsThenDetaches: an agent's session on a target that left web
// content gets Inspector.detached with the reason, and the browser a
// detach sent on the session that attached it.
func TestEvictTellsThenDetaches(t *testing.T) {
	h := newHarness(t)
	x := h.startAgent(t, AgentOptions{Name: "x"})
	bs := x.a.BrowserSession()
	h.b.inject(attachedEvent(bs, "S1", "page"))
	if e := x.recvEnv(t); e.Method != "Target.attachedToTarget" {
		t.Fatalf("got %s, want the attachment", e.Method)
	}
	if s, _ := x.a.SessionsOn("T-S1"); len(s) != 1 || s[0] != "S1" {
		t.Fatalf("SessionsOn = %v", s)
	}
	x.a.Evict("T-S1", "cdpguard: gone to chrome://settings")
	e := x.recvEnv(t)
	if e.Method != "Inspector.detached" || e.SessionID != "S1" || !strings.Contains(string(e.Params), "chrome://settings") {
		t.Errorf("agent got %s on %q %s, want Inspector.detached with the reason on S1", e.Method, e.SessionID, e.Params)
	}
	d := h.b.waitCommand(t, "detach", method("Target.detachFromTarget"))
	if d.SessionID != bs || !strings.Contains(string(d.Params), `"S1"`) {
		t.Errorf("detach sent on %q with %s, want on %q for S1", d.SessionID, d.Params, bs)
	}
}

// TestLeaving: a detach ends the session it names or, by target id, the
// sessions the sending session attached to that target, and with each
// every session attached below it (Chrome detaches children with their
// parent): a browser-level session's pages and their frames.
func TestLeaving(t *testing.T) {
	h := newHarness(t)
	x := h.startAgent(t, AgentOptions{Name: "x"})
	bs := x.a.BrowserSession()
	for _, ev := range []string{
		attachedEvent(bs, "P1", "page"),    // the connection's own page
		attachedEvent(bs, "B1", "browser"), // a browser-level session (auto-attached)
		attachedEvent("B1", "P2", "page"),  // a page it attached
		attachedEvent("P2", "F2", "iframe"),
		attachedEvent("B1", "P3", "page"),
	} {
		h.b.inject(ev)
		if e := x.recvEnv(t); e.Method != "Target.attachedToTarget" {
			t.Fatalf("got %s, want the attachment", e.Method)
		}
	}
	for _, c := range []struct {
		on, session, target string
		want                []string
	}{
		{bs, "P1", "", []string{"P1"}},
		{bs, "B1", "", []string{"B1", "P2", "P3", "F2"}},
		{bs, "P2", "", []string{"P2", "F2"}},
		{bs, "", "T-P1", []string{"P1"}},
		{"B1", "", "T-P2", []string{"P2", "F2"}},
		{bs, "", "T-P2", nil}, // the connection's session did not attach P2
		{bs, "", "", nil},
	} {
		got := x.a.Leaving(c.on, c.session, c.target)
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("Leaving(%q, %q, %q) = %q, want %q", c.on, c.session, c.target, got, c.want)
		}
	}
}

// TestShareWindowBoundsInflight: one user's flood never has more than the
// window's commands waiting in the browser at once, while the browser holds
// its answers, for as long as slotWait; answered, the rest go on. It runs
// in a bubble (testing/synctest): time moves only when every goroutine of
// the relay is blocked, so "not yet" is exact however loaded the machine.
func TestShareWindowBoundsInflight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		var mu sync.Mutex
		var held []*cdpmsg.Envelope
		h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
			if e.Method != "Flood.m" {
				return nil, false
			}
			mu.Lock()
			held = append(held, e)
			mu.Unlock()
			return nil, true // held: no answer yet
		})
		share := NewShare(1<<20, 4)
		x := h.startAgent(t, AgentOptions{Name: "x", Share: share, Rate: -1})
		sent := make(chan struct{})
		go func() { // the agent's read loop blocks while the window is full
			defer close(sent)
			for i := 1; i <= 6; i++ {
				if !x.trySend(fmt.Sprintf(`{"id":%d,"method":"Flood.m"}`, i), wait) {
					return
				}
			}
		}()
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return len(held)
		}
		time.Sleep(slotWait - time.Millisecond)
		if n := count(); n != 4 {
			t.Errorf("%d commands of one user reached the browser at once, want the window's 4", n)
		}
		// Answering frees the window for the rest. The answers are
		// injected after mu is let go: a freed slot sends the next command
		// at once, and the fake browser calls the responder (which takes
		// mu) holding its own lock, the one inject takes.
		mu.Lock()
		answers := make([]string, 0, len(held))
		for _, e := range held {
			answers = append(answers, string(echo(e)))
		}
		mu.Unlock()
		h.b.inject(answers...)
		synctest.Wait()
		if n := count(); n != 6 {
			t.Errorf("after the answers %d of 6 commands reached the browser", n)
		}
		<-sent
	})
}

// TestShareSlotWait: a command that found no slot for slotWait goes out
// without one (the commands ahead are ones Chrome is working on, not
// queued), so a client with long waits is slowed, never stalled.
func TestShareSlotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		var mu sync.Mutex
		held := 0
		h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
			if e.Method != "Slow.m" {
				return nil, false
			}
			mu.Lock()
			held++
			mu.Unlock()
			return nil, true // never answered
		})
		x := h.startAgent(t, AgentOptions{Name: "x", Share: NewShare(1<<20, 2), Rate: -1})
		for i := 1; i <= 3; i++ {
			x.send(t, fmt.Sprintf(`{"id":%d,"method":"Slow.m"}`, i))
		}
		count := func() int {
			mu.Lock()
			defer mu.Unlock()
			return held
		}
		synctest.Wait()
		if n := count(); n != 2 {
			t.Fatalf("%d commands reached the browser before slotWait, want the window's 2", n)
		}
		time.Sleep(slotWait)
		synctest.Wait()
		if n := count(); n != 3 {
			t.Fatalf("%d commands reached the browser after slotWait, want all 3", n)
		}
	})
}

// TestSharePerUserRate: two connections of one user, each under its own
// limit, are held to the user's together.
func TestSharePerUserRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // no refill while the test runs
		h := newHarness(t)
		share := NewShare(10, 64) // bursts of 20 for the user
		x := h.startAgent(t, AgentOptions{Name: "x", Share: share, Rate: 1000})
		y := h.startAgent(t, AgentOptions{Name: "y", Share: share, Rate: 1000})
		limited := 0
		for i := 1; i <= 15; i++ {
			for _, ag := range []*agent{x, y} {
				e := ag.call(t, int64(i), "", "Browser.getVersion", "")
				if len(e.Error) > 0 {
					wantError(t, e, cdpmsg.CodeServerError, "more than 10 commands a second from this user")
					limited++
				}
			}
		}
		if limited != 10 {
			t.Errorf("%d of 30 commands refused by the user's limit, want 10 (burst 20)", limited)
		}
	})
}
