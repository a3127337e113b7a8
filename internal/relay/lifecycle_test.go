package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// TestMalformedInput sends broken messages; each gets a CDP error and the
// connection stays usable.
func TestMalformedInput(t *testing.T) {
	h := newHarness(t)
	x := h.startAgent(t, AgentOptions{Name: "x"})
	const noID = -1
	cases := []struct {
		in   string
		code int
		id   int64
	}{
		{`{`, cdpmsg.CodeParseError, noID},
		{``, cdpmsg.CodeParseError, noID},
		{`[]`, cdpmsg.CodeParseError, noID},
		{`""`, cdpmsg.CodeParseError, noID},
		{`{"id":1,"id":2,"method":"A.b"}`, cdpmsg.CodeParseError, noID},
		{`{"id":1,"method":"A.b","params":{"a":{"b":1,"b":2}}}`, cdpmsg.CodeParseError, noID},
		{"{\"id\":1,\"method\":\"A.\xff\"}", cdpmsg.CodeParseError, noID},
		{"{\"id\":1,\"method\":\"A.b\",\"params\":{\"s\":\"\xc3\x28\"}}", cdpmsg.CodeParseError, noID},
		{`{"id":1,"method":"A.b"} {"id":2,"method":"A.b"}`, cdpmsg.CodeParseError, noID},
		{`{"id":"1","method":"A.b"}`, cdpmsg.CodeParseError, noID},
		{`{"id":1.5,"method":"A.b"}`, cdpmsg.CodeParseError, noID},
		{`{"id":1e3,"method":"A.b"}`, cdpmsg.CodeParseError, noID},
		{`{"id":-1,"method":"A.b"}`, cdpmsg.CodeParseError, noID},
		{`{"id":99999999999999999999,"method":"A.b"}`, cdpmsg.CodeParseError, noID},
		{`{"id":null,"method":"A.b"}`, cdpmsg.CodeParseError, noID},
		{`{"id":1,"method":5}`, cdpmsg.CodeParseError, noID},
		{`{"id":1,"method":"A.b","sessionId":7}`, cdpmsg.CodeParseError, noID},
		{`{"method":"A.b"}`, cdpmsg.CodeInvalidRequest, noID},
		{`{}`, cdpmsg.CodeInvalidRequest, noID},
		{`{"id":4}`, cdpmsg.CodeInvalidRequest, 4},
		{`{"id":5,"method":""}`, cdpmsg.CodeInvalidRequest, 5},
		{`{"id":6,"result":{}}`, cdpmsg.CodeInvalidRequest, 6},
	}
	for i, c := range cases {
		x.send(t, c.in)
		e := x.recvEnv(t)
		if c.id == noID && e.HasID || c.id != noID && e.ID != c.id {
			t.Errorf("%q: reply id %s, want %d", c.in, e.RawID, c.id)
		}
		var ce CallError
		if err := jsonv2.Unmarshal(e.Error, &ce); err != nil || ce.Code != c.code || !strings.HasPrefix(ce.Msg, "cdpguard: ") {
			t.Errorf("%q: error %s, want code %d", c.in, e.Error, c.code)
		}
		good := int64(100 + i)
		wantEcho(t, x.call(t, good, "", "Good.command", ""), "Good.command", "")
	}
	for _, c := range h.b.commands() {
		if c.Method != "Good.command" && c.Method != "Target.attachToBrowserTarget" {
			t.Errorf("browser received %s", c.Method)
		}
	}
}

// TestSlowAgentDisconnected fills the queue of an agent that never reads:
// it must be disconnected with 1008 while another agent keeps working, and
// what it sends afterwards must not reach the browser.
func TestSlowAgentDisconnected(t *testing.T) {
	h := newHarness(t)
	slow := h.startAgent(t, AgentOptions{Name: "slow", Bounds: Bounds{AgentQueueBytes: -1, AgentMaxBytes: 200, PauseBound: -1}})
	good := h.startAgent(t, AgentOptions{Name: "good"})
	bs := slow.a.BrowserSession()
	for i := range 64 {
		h.b.inject(event(bs, fmt.Sprintf("Flood.e%d", i)))
	}
	select {
	case <-slow.a.quit:
	case <-time.After(wait):
		t.Fatal("queue overflow not detected")
	}
	wantEcho(t, good.call(t, 1, "", "Page.enable", ""), "Page.enable", "")

	select {
	case <-slow.done:
		if code, reason, byRelay := slow.closeInfo(); !byRelay || code != StatusPolicy || !strings.Contains(reason, "not reading") {
			t.Errorf("closed with %d %q (by relay %v), want %d not reading", code, reason, byRelay, StatusPolicy)
		}
		if err, ok := slow.waitServe(t); !ok || err == nil || !strings.Contains(err.Error(), "not reading") {
			t.Errorf("Serve = %v (returned %v)", err, ok)
		}
	case <-time.After(time.Second):
		t.Errorf("slow agent's connection still open 1s after its queue overflowed: " +
			"writeLoop is blocked in AgentConn.Write with a context that closeWith does not cancel, " +
			"so the close never happens and Serve never returns")
	}

	// Two sends: when the second is taken, the first has been handled.
	if slow.trySend(`{"id":98,"method":"After.overflow"}`, 100*time.Millisecond) &&
		slow.trySend(`{"id":99,"method":"After.overflow2"}`, 100*time.Millisecond) {
		if h.b.saw(method("After.overflow")) != nil {
			t.Errorf("a command sent after the agent was disconnected reached the browser (handle does not check quit)")
		}
	}
	wantEcho(t, good.call(t, 2, "", "Page.enable", ""), "Page.enable", "")
}

// TestBrowserLost kills the browser: every agent is closed with 1011, Serve
// returns, pending and later guard calls fail with ErrBrowserLost.
func TestBrowserLost(t *testing.T) {
	h := newHarness(t)
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		return nil, strings.HasSuffix(e.Method, ".hold") // never answered
	})
	agents := []*agent{
		h.startAgent(t, AgentOptions{Name: "a"}),
		h.startAgent(t, AgentOptions{Name: "b"}),
		h.startAgent(t, AgentOptions{Name: "c"}),
	}
	agents[0].send(t, `{"id":1,"method":"Agent.hold"}`)
	callErr := make(chan error, 1)
	go func() {
		_, err := h.m.Call(context.Background(), "", "Guard.hold", nil)
		callErr <- err
	}()
	h.b.waitCommand(t, "Guard.hold", method("Guard.hold"))
	h.b.waitCommand(t, "Agent.hold", method("Agent.hold"))

	h.b.kill()
	for _, ag := range agents {
		err, ok := ag.waitServe(t)
		if !ok {
			t.Fatalf("%s: Serve did not return", ag.a.Name())
		}
		if code, _, byRelay := ag.closeInfo(); !byRelay || code != StatusBrowserLost {
			t.Errorf("%s: closed with %d (by relay %v), want %d; Serve = %v", ag.a.Name(), code, byRelay, StatusBrowserLost, err)
		}
	}
	select {
	case err := <-callErr:
		if !errors.Is(err, ErrBrowserLost) {
			t.Errorf("pending Call = %v", err)
		}
	case <-time.After(wait):
		t.Fatal("pending Call did not return")
	}
	select {
	case <-h.m.Done():
	case <-time.After(wait):
		t.Fatal("Done not closed")
	}
	if !errors.Is(h.m.Err(), ErrBrowserLost) {
		t.Errorf("Err = %v", h.m.Err())
	}
	if _, err := h.m.Call(context.Background(), "", "Late.call", nil); !errors.Is(err, ErrBrowserLost) {
		t.Errorf("Call after loss = %v", err)
	}
	if err := h.m.Send("", "Late.send", nil); !errors.Is(err, ErrBrowserLost) {
		t.Errorf("Send after loss = %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := h.m.NewAgent(ctx, newPipe(), AgentOptions{}); !errors.Is(err, ErrBrowserLost) {
		t.Errorf("NewAgent after loss = %v", err)
	}
}

// TestAgentDisconnectDetaches checks that a gone agent's browser session is
// detached and that late replies and events for it are dropped.
func TestAgentDisconnectDetaches(t *testing.T) {
	h := newHarness(t)
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		return nil, e.Method == "X.hold"
	})
	x := h.startAgent(t, AgentOptions{Name: "x"})
	y := h.startAgent(t, AgentOptions{Name: "y"})
	bs := x.a.BrowserSession()
	h.b.inject(attachedEvent(bs, "C1", "page"))
	x.recvEnv(t)
	x.send(t, `{"id":1,"method":"X.hold"}`)
	held := h.b.waitCommand(t, "X.hold", method("X.hold"))

	x.hangup()
	if _, ok := x.waitServe(t); !ok {
		t.Fatal("Serve did not return after hangup")
	}
	h.b.waitCommand(t, "Target.detachFromTarget of "+bs, func(e *cdpmsg.Envelope) bool {
		var p struct {
			SessionID string `json:"sessionId"`
		}
		return e.Method == "Target.detachFromTarget" && e.SessionID == "" &&
			jsonv2.Unmarshal(e.Params, &p) == nil && p.SessionID == bs
	})
	h.b.inject(
		string(cdpmsg.AppendResponse(nil, held.ID, bs, []byte(`{"late":true}`), nil)),
		event(bs, "Late.event"), event("C1", "Late.child"),
		fmt.Sprintf(`{"method":"Target.detachedFromTarget","params":{"sessionId":"C1"},"sessionId":%q}`, bs),
	)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if res, err := h.m.Call(ctx, "", "Guard.ping", nil); err != nil || string(res) != `{"echo":"Guard.ping"}` {
		t.Fatalf("guard Call after disconnect = %s, %v", res, err)
	}
	wantEcho(t, y.call(t, 1, "", "Page.enable", ""), "Page.enable", "")
	wantError(t, y.call(t, 2, "C1", "Page.enable", ""), cdpmsg.CodeServerError, `"C1"`)
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	for s, a := range h.m.sessions {
		if a == x.a {
			t.Errorf("mux still routes session %q to the gone agent", s)
		}
	}
	for id, p := range h.m.pending {
		if p.agent == x.a {
			t.Errorf("mux keeps pending id %d of the gone agent", id)
		}
	}
}

// TestConcurrentGuardCalls runs 100 guard calls at once.
func TestConcurrentGuardCalls(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			m := fmt.Sprintf("Guard.m%d", i)
			res, err := h.m.Call(ctx, "S", m, map[string]int{"i": i})
			if err != nil || string(res) != fmt.Sprintf(`{"echo":%q}`, m) {
				t.Errorf("Call %s = %s, %v", m, res, err)
			}
		})
	}
	wg.Wait()
	h.m.mu.Lock()
	n := len(h.m.pending)
	h.m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d pending entries left", n)
	}
}

// TestGuardCallError checks that a CDP error reply becomes a *CallError and
// that a cancelled Call forgets its id.
func TestGuardCallError(t *testing.T) {
	h := newHarness(t)
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		switch e.Method {
		case "Bad.call":
			return [][]byte{cdpmsg.AppendError(nil, e.ID, "", cdpmsg.CodeMethodNotFound, "'Bad.call' wasn't found")}, true
		case "Never.answered":
			return nil, true
		}
		return nil, false
	})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := h.m.Call(ctx, "", "Bad.call", []byte(`{}`))
	var ce *CallError
	if !errors.As(err, &ce) || ce.Code != cdpmsg.CodeMethodNotFound || ce.Method != "Bad.call" {
		t.Fatalf("err = %v", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := h.m.Call(short, "", "Never.answered", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	if _, err := h.m.Call(ctx, "", "Bad.params", func() {}); err == nil {
		t.Fatal("unmarshalable params accepted")
	}
	h.m.mu.Lock()
	n := len(h.m.pending)
	h.m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d pending entries left", n)
	}
}

// TestActivityAtMostOncePerSecond: the owner is told of the agent's
// activity (Hooks.Activity), and at most once in each second its messages
// span, however many it sends.
func TestActivityAtMostOncePerSecond(t *testing.T) {
	h := newHarness(t)
	var told atomic.Int64
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Hooks: hooks{activity: func() { told.Add(1) }}})
	from := time.Now().Unix()
	const n = 200
	for i := range n {
		x.call(t, int64(i+1), "", "M.m", `{}`)
	}
	most := time.Now().Unix() - from + 1 // the seconds the n messages span
	if got := told.Load(); got < 1 || got > most {
		t.Errorf("Activity told %d times for %d messages over %d seconds, want 1 to %d", got, n, most, most)
	}
}
