package relay

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// bigReplies makes the fake browser answer Big.* commands with a result of
// size bytes.
func bigReplies(h *harness, size int) {
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		if !strings.HasPrefix(e.Method, "Big.") {
			return nil, false
		}
		res := fmt.Appendf(nil, `{"s":"%s"}`, strings.Repeat("x", size))
		return [][]byte{cdpmsg.AppendResponse(nil, e.ID, e.SessionID, res, nil)}, true
	})
}

func bigCommand(id int) string { return fmt.Sprintf(`{"id":%d,"method":"Big.get"}`, id) }

// TestBackPressure: an agent that does not read gets its commands read only
// until its queue is over the mark; once it reads the queue down to half
// the mark, its commands are read again. No bound cuts it off meanwhile.
func TestBackPressure(t *testing.T) {
	h := newHarness(t)
	bigReplies(h, 1000)
	var throttled atomic.Int32
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Hooks: hooks{throttled: func() { throttled.Add(1) }},
		Bounds: Bounds{AgentQueueBytes: 3000, AgentMaxBytes: -1, UserMaxBytes: -1, PauseBound: -1}})
	sent := 0
	for x.trySend(bigCommand(sent+1), 300*time.Millisecond) {
		sent++
		if sent > 50 {
			t.Fatalf("the relay read %d commands of an agent that reads nothing (mark 3000 bytes, replies of 1000)", sent)
		}
	}
	if sent < 3 {
		t.Fatalf("the relay read only %d commands before pausing; want at least 3 (it pauses only over 3000 bytes)", sent)
	}
	if x.a.held.load() <= 3000 {
		t.Fatalf("paused with %d bytes queued, want over the 3000 mark", x.a.held.load())
	}
	if throttled.Load() == 0 {
		t.Errorf("OnThrottle was not called")
	}
	for range sent {
		if e := x.recvEnv(t); len(e.Result) < 1000 {
			t.Fatalf("reply %s is not the big one", e.Result)
		}
	}
	// Caught up: reading resumes.
	if !x.trySend(bigCommand(1000), wait) {
		t.Fatalf("the relay did not read the agent's commands again after it read its queue")
	}
	if e := x.recvEnv(t); e.ID != 1000 {
		t.Fatalf("got reply %d, want 1000", e.ID)
	}
	waitBytes(t, "the agent's", x.a.held.load, 0)
}

// TestCutOffOverMax: replies already in the browser keep coming after
// reading stopped; past the agent's maximum it is closed at once with a
// reason naming the bound, counted, and its queued bytes are released
// from its user's share.
func TestCutOffOverMax(t *testing.T) {
	h := newHarness(t)
	share := NewShare(1<<20, 64)
	var kinds atomic.Value
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Share: share,
		Hooks:  hooks{cutOff: func(kind, reason string) { kinds.Store(kind + ": " + reason) }},
		Bounds: Bounds{AgentQueueBytes: -1, AgentMaxBytes: 5000, UserMaxBytes: -1, PauseBound: -1}})
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		if e.Method != "Big.many" {
			return nil, false
		}
		var out [][]byte
		for range 10 { // ten replies' worth of events for one command
			out = append(out, cdpmsg.AppendEvent(nil, e.SessionID, "Big.event", fmt.Appendf(nil, `{"s":"%s"}`, strings.Repeat("y", 1000))))
		}
		return out, true
	})
	x.send(t, `{"id":1,"method":"Big.many"}`)
	code, reason, byRelay := x.closeInfo()
	if !byRelay || code != StatusPolicy || !strings.Contains(reason, "not reading") || !strings.Contains(reason, "bound") {
		t.Fatalf("closed with %d %q (by relay %v); want %d naming the bound", code, reason, byRelay, StatusPolicy)
	}
	if k, _ := kinds.Load().(string); !strings.HasPrefix(k, CutAgentBytes+": ") {
		t.Errorf("OnCutOff got %q, want kind %s", k, CutAgentBytes)
	}
	if _, ok := x.waitServe(t); !ok {
		t.Fatal("Serve did not return")
	}
	waitBytes(t, "the user's", share.QueuedBytes, 0)
}

// TestUserShare: two agents of one user that read nothing: the user's
// mark pauses the second agent even though its own queue is empty, and a
// third agent of another user is not paused.
func TestUserShare(t *testing.T) {
	h := newHarness(t)
	bigReplies(h, 1000)
	share := NewShare(1<<20, 64)
	b := Bounds{AgentQueueBytes: -1, AgentMaxBytes: -1, UserQueueBytes: 2500, UserMaxBytes: -1, PauseBound: -1}
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Share: share, Bounds: b})
	y := h.startAgent(t, AgentOptions{Name: "y", Rate: -1, Share: share, Bounds: b})
	z := h.startAgent(t, AgentOptions{Name: "z", Rate: -1, Share: NewShare(1<<20, 64), Bounds: b})
	for i := range 3 {
		x.send(t, bigCommand(i+1))
	}
	deadline := time.Now().Add(wait)
	for share.QueuedBytes() <= 2500 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	// y's read in progress takes one command; the next waits.
	yRead := 0
	for y.trySend(bigCommand(10+yRead), 300*time.Millisecond) {
		if yRead++; yRead > 1 {
			t.Fatalf("the user's other agent was read although the user has %d bytes queued (mark 2500)", share.QueuedBytes())
		}
	}
	wantEcho(t, z.call(t, 1, "", "Page.enable", ""), "Page.enable", "")
	for range 3 {
		x.recvEnv(t)
	}
	for range yRead {
		y.recvEnv(t)
	}
	if !y.trySend(bigCommand(20), wait) {
		t.Fatal("the user's other agent was not read again after the user's queue drained")
	}
}

// TestPauseBound: an agent whose own queue stays over its mark for longer
// than the pause bound is cut off with a reason naming it.
func TestPauseBound(t *testing.T) {
	h := newHarness(t)
	bigReplies(h, 1000)
	var kind atomic.Value
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Hooks: hooks{cutOff: func(k, _ string) { kind.Store(k) }},
		Bounds: Bounds{AgentQueueBytes: 1500, AgentMaxBytes: -1, UserMaxBytes: -1, PauseBound: 200 * time.Millisecond}})
	for i := range 2 {
		x.send(t, bigCommand(i+1))
	}
	start := time.Now()
	code, reason, _ := x.closeInfo()
	if code != StatusPolicy || !strings.Contains(reason, "did not catch up within 200ms") {
		t.Fatalf("closed with %d %q; want %d, did not catch up", code, reason, StatusPolicy)
	}
	if k, _ := kind.Load().(string); k != CutPaused {
		t.Errorf("OnCutOff kind %q, want %s", k, CutPaused)
	}
	if d := time.Since(start); d > wait {
		t.Errorf("cut off after %v", d)
	}
}

// TestMessageBound: a reply over the one-message bound becomes a CDP error
// naming the bound; an event over it is dropped and counted; the
// connection stays usable.
func TestMessageBound(t *testing.T) {
	h := newHarness(t)
	bigReplies(h, 5000)
	var drops atomic.Int32
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Hooks: hooks{dropped: func(string) { drops.Add(1) }},
		Bounds: Bounds{MaxMessage: 4000}})
	wantError(t, x.call(t, 1, "", "Big.get", ""), cdpmsg.CodeServerError, "message bound")
	h.b.inject(string(cdpmsg.AppendEvent(nil, x.a.BrowserSession(), "Big.event", fmt.Appendf(nil, `{"s":"%s"}`, strings.Repeat("z", 5000)))))
	h.b.inject(string(cdpmsg.AppendEvent(nil, x.a.BrowserSession(), "Small.event", []byte(`{}`))))
	if e := x.recvEnv(t); e.Method != "Small.event" {
		t.Fatalf("got %s, want the small event (the big one dropped)", e.Method)
	}
	if drops.Load() != 2 {
		t.Errorf("OnDropped called %d times, want 2", drops.Load())
	}
	wantEcho(t, x.call(t, 2, "", "Page.enable", ""), "Page.enable", "")
}

// TestInFlightBound: commands the browser has not answered count against
// the connection's in-flight bound; over it a command is refused naming
// the bound.
func TestInFlightBound(t *testing.T) {
	h := newHarness(t)
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		return nil, strings.HasSuffix(e.Method, ".hold")
	})
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Bounds: Bounds{MaxInFlight: 3}})
	for i := range 3 {
		x.send(t, fmt.Sprintf(`{"id":%d,"method":"Wait.hold"}`, i+1))
	}
	wantError(t, x.call(t, 9, "", "Page.enable", ""), cdpmsg.CodeServerError, "in-flight bound: 3")
}

// waitBytes waits (bounded) for a byte count to reach want: a message
// counts until its write returned, which is just after the reader got it.
func waitBytes(t *testing.T, what string, load func() int64, want int64) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s queue counts %d bytes, want %d", what, load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestOwedReplies: once an agent's replies are known to be big, its
// commands in the browser are bounded by what their replies would add to
// its queue: past the mark the next command waits for a reply, or OweWait
// at most (a command that never ends must not stall the agent).
func TestOwedReplies(t *testing.T) {
	const owe = 3 * time.Second
	h := newHarness(t)
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		switch e.Method {
		case "Big.get":
			res := fmt.Appendf(nil, `{"s":"%s"}`, strings.Repeat("x", 2000))
			return [][]byte{cdpmsg.AppendResponse(nil, e.ID, e.SessionID, res, nil)}, true
		case "Big.hold":
			return nil, true // answered never
		}
		return nil, false
	})
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1,
		// OweWait well above the 300 ms probe below, so a loaded machine
		// cannot let the wait run out before the probe starts.
		Bounds: Bounds{AgentQueueBytes: 5000, AgentMaxBytes: -1, UserMaxBytes: -1, PauseBound: -1, OweWait: owe}})
	x.call(t, 1, "", "Big.get", "") // the average reply is now about 2 kB
	for i := range 3 {              // 2 owe 4 kB, under the mark; the third takes them over it
		x.send(t, fmt.Sprintf(`{"id":%d,"method":"Big.hold"}`, 10+i))
	}
	if x.trySend(`{"id":20,"method":"Big.hold"}`, 300*time.Millisecond) {
		x.a.mu.Lock()
		n := len(x.a.inflight)
		x.a.mu.Unlock()
		t.Fatalf("a command was read while the agent's commands in the browser owed more than its mark (in flight %d, average reply %d B, queued %d B)",
			n, x.a.replyAvg.Load(), x.a.held.load())
	}
	// The next command is read once OweWait runs out, though no reply
	// came. How long after is the machine's business (a loaded run took
	// over a second longer): wait is the hang guard.
	if !x.trySend(`{"id":21,"method":"Big.hold"}`, owe+wait) {
		t.Fatal("the agent stayed stalled past OweWait")
	}
}

// TestTotalBound: user keys are only a header, so the agents of every user
// together have a bound too; past it the agent holding the most is cut
// off, not the one whose message came last.
func TestTotalBound(t *testing.T) {
	h := newHarness(t)
	bigReplies(h, 1000)
	b := Bounds{AgentQueueBytes: -1, AgentMaxBytes: -1, UserMaxBytes: -1, TotalMaxBytes: 3000, PauseBound: -1}
	var cut atomic.Value
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Share: NewShare(1<<20, 64), Bounds: b,
		Hooks: hooks{cutOff: func(kind, _ string) { cut.Store(kind) }}})
	y := h.startAgent(t, AgentOptions{Name: "y", Rate: -1, Share: NewShare(1<<20, 64), Bounds: b})
	x.send(t, bigCommand(1))
	x.send(t, bigCommand(2))
	for deadline := time.Now().Add(wait); x.a.held.load() < 2000; { // both replies queued
		if time.Now().After(deadline) {
			t.Fatalf("x's two replies not queued: %d bytes", x.a.held.load())
		}
		time.Sleep(time.Millisecond)
	}
	y.send(t, bigCommand(3))
	code, reason, _ := x.closeInfo()
	if code != StatusPolicy || !strings.Contains(reason, "held the most") {
		t.Fatalf("x closed with %d %q; want %d, held the most", code, reason, StatusPolicy)
	}
	if k, _ := cut.Load().(string); k != CutTotalBytes {
		t.Errorf("OnCutOff kind %q, want %s", k, CutTotalBytes)
	}
	if e := y.recvEnv(t); e.ID != 3 {
		t.Errorf("y got %d, want its reply 3", e.ID)
	}
}

// heldCount is a Holder the test sets.
type heldCount struct{ atomic.Int64 }

func (h *heldCount) Held() int64 { return h.Load() }

// TestTotalBoundCountsElsewhere: bytes of the same budget held outside the
// relay (messages being received) count with the queued bytes: a reply
// that fits the total alone cuts off the agent holding the most once they
// are added.
func TestTotalBoundCountsElsewhere(t *testing.T) {
	h := newHarness(t)
	bigReplies(h, 1000)
	var elsewhere heldCount
	b := Bounds{AgentQueueBytes: -1, AgentMaxBytes: -1, UserMaxBytes: -1, TotalMaxBytes: 3000, PauseBound: -1, Elsewhere: &elsewhere}
	var cut atomic.Value
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Bounds: b, Hooks: hooks{cutOff: func(kind, _ string) { cut.Store(kind) }}})
	x.send(t, bigCommand(1))
	if e := x.recvEnv(t); e.ID != 1 {
		t.Fatalf("got %d, want reply 1 while nothing is held elsewhere", e.ID)
	}
	waitBytes(t, "the agent's", x.a.held.load, 0)
	elsewhere.Store(2500)
	x.send(t, bigCommand(2))
	code, reason, _ := x.closeInfo()
	if code != StatusPolicy || !strings.Contains(reason, "held the most") {
		t.Fatalf("closed with %d %q; want %d, held the most", code, reason, StatusPolicy)
	}
	if k, _ := cut.Load().(string); k != CutTotalBytes {
		t.Errorf("OnCutOff kind %q, want %s", k, CutTotalBytes)
	}
}
