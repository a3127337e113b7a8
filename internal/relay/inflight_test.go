package relay

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// holdingBrowser makes the fake browser hold every *.hold command
// unanswered.
func holdingBrowser(h *harness) {
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		return nil, strings.HasSuffix(e.Method, ".hold")
	})
}

// heldOn waits for the held command method on session and returns it.
func heldOn(t *testing.T, h *harness, session, methodName string) *cdpmsg.Envelope {
	t.Helper()
	return h.b.waitCommand(t, methodName+" on "+session, func(e *cdpmsg.Envelope) bool {
		return e.Method == methodName && e.SessionID == session
	})
}

// attach announces child attached on session on and reads the event.
func (ag *agent) attach(t *testing.T, h *harness, on, child, typ string) {
	t.Helper()
	h.b.inject(attachedEvent(on, child, typ))
	if e := ag.recvEnv(t); e.Method != "Target.attachedToTarget" {
		t.Fatalf("got %s, want the attachment of %s", e.Method, child)
	}
}

func detachedEvent(on, child string) string {
	return fmt.Sprintf(`{"method":"Target.detachedFromTarget","params":{"sessionId":%q,"targetId":"T-%s"},"sessionId":%q}`, child, child, on)
}

// wantReply checks that e is the reply to id on session.
func wantReply(t *testing.T, e *cdpmsg.Envelope, id int64, session string) {
	t.Helper()
	if !e.HasID || e.ID != id || e.SessionID != session || e.Method != "" {
		t.Fatalf("got id %s method %q on session %q (%s %s), want the reply to %d on %q", e.RawID, e.Method, e.SessionID, e.Result, e.Error, id, session)
	}
}

// TestSameIDTwoSessions: CDP ids are per session. Two sessions of one
// connection with the same id in flight both reach the browser and each
// answer goes to the session its command came on, whichever comes first;
// a reuse on the same session is refused, saying so, and the id works
// again once answered.
func TestSameIDTwoSessions(t *testing.T) {
	h := newHarness(t)
	holdingBrowser(h)
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1})
	bs := x.a.BrowserSession()
	x.attach(t, h, bs, "S1", "page")
	x.attach(t, h, bs, "S2", "page")
	x.send(t, `{"id":1,"sessionId":"S1","method":"Wait.hold"}`)
	x.send(t, `{"id":1,"sessionId":"S2","method":"Wait.hold"}`)
	c1, c2 := heldOn(t, h, "S1", "Wait.hold"), heldOn(t, h, "S2", "Wait.hold")

	r := x.call(t, 1, "S1", "Page.enable", "")
	msg := wantError(t, r, cdpmsg.CodeInvalidRequest, "in flight on this session")
	if r.SessionID != "S1" || !strings.Contains(msg, "id 1") {
		t.Errorf("reuse refusal %q on %q, want one naming id 1 on S1", msg, r.SessionID)
	}

	h.b.inject(string(cdpmsg.AppendResponse(nil, c2.ID, "S2", []byte(`{"who":"S2"}`), nil)))
	e := x.recvEnv(t)
	wantReply(t, e, 1, "S2")
	if string(e.Result) != `{"who":"S2"}` {
		t.Errorf("S2's reply carries %s", e.Result)
	}
	h.b.inject(string(cdpmsg.AppendResponse(nil, c1.ID, "S1", []byte(`{"who":"S1"}`), nil)))
	e = x.recvEnv(t)
	wantReply(t, e, 1, "S1")
	if string(e.Result) != `{"who":"S1"}` {
		t.Errorf("S1's reply carries %s", e.Result)
	}
	wantEcho(t, x.call(t, 1, "S1", "Page.enable", ""), "Page.enable", "S1")
	wantEcho(t, x.call(t, 1, "S2", "Page.enable", ""), "Page.enable", "S2")
	wantEcho(t, x.call(t, 1, "", "Page.enable", ""), "Page.enable", "")
}

// TestDetachSettlesInFlight: a command the browser never answers when its
// session detaches gets no answer, as from Chrome (the agent is told of
// the detach next); its reply hook sees Chrome's error, so what the guard
// began for it ends; a late reply from the browser is not delivered; the
// id is free again; other sessions' commands stay in flight.
func TestDetachSettlesInFlight(t *testing.T) {
	h := newHarness(t)
	holdingBrowser(h)
	var hooked atomic.Value
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Interceptor: hooks{intercept: func(_ context.Context, _ *Agent, c Command) Verdict {
		if c.Method != "Wait.hold" {
			return Verdict{}
		}
		return Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			hooked.Store(string(errRaw))
			return result, errRaw
		}}
	}}})
	bs := x.a.BrowserSession()
	x.attach(t, h, bs, "S1", "page")
	x.attach(t, h, bs, "S2", "page")
	x.send(t, `{"id":5,"sessionId":"S1","method":"Wait.hold"}`)
	x.send(t, `{"id":6,"sessionId":"S2","method":"Wait.hold"}`)
	c1 := heldOn(t, h, "S1", "Wait.hold")
	heldOn(t, h, "S2", "Wait.hold")

	h.b.inject(detachedEvent(bs, "S1"))
	if e := x.recvEnv(t); e.Method != "Target.detachedFromTarget" {
		t.Fatalf("got %s %s %s, want the detach and no answer to the lost command", e.Method, e.RawID, e.Error)
	}
	if got, _ := hooked.Load().(string); !strings.Contains(got, "Inspected target navigated or closed") {
		t.Errorf("the reply hook of the lost command saw %q, want Chrome's error", got)
	}
	// A late reply from the browser is not delivered: the next message is
	// the probe's reply.
	h.b.inject(string(cdpmsg.AppendResponse(nil, c1.ID, "S1", []byte(`{"late":true}`), nil)))
	wantEcho(t, x.call(t, 7, "", "Page.enable", ""), "Page.enable", "")

	x.attach(t, h, bs, "S3", "page")
	wantEcho(t, x.call(t, 5, "S3", "Page.enable", ""), "Page.enable", "S3")
	wantEcho(t, x.call(t, 5, "", "Page.enable", ""), "Page.enable", "")
	wantError(t, x.call(t, 5, "S1", "Page.enable", ""), cdpmsg.CodeServerError, `"S1"`)
	// S2's command is still in flight there.
	wantError(t, x.call(t, 6, "S2", "Page.enable", ""), cdpmsg.CodeInvalidRequest, "in flight")
}

// TestChildrenDetachedWithParent: Chrome detaches a session's children with
// it and tells of the parent only; the commands in flight on each are
// settled without an answer, their ids are free, and the children are no
// longer the agent's.
func TestChildrenDetachedWithParent(t *testing.T) {
	h := newHarness(t)
	holdingBrowser(h)
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1})
	bs := x.a.BrowserSession()
	x.attach(t, h, bs, "B1", "browser")
	x.attach(t, h, "B1", "P2", "page")
	x.attach(t, h, "P2", "F2", "iframe")
	x.attach(t, h, bs, "P3", "page")
	for _, s := range []string{"B1", "P2", "F2", "P3"} {
		x.send(t, fmt.Sprintf(`{"id":1,"sessionId":%q,"method":"Wait.hold"}`, s))
		heldOn(t, h, s, "Wait.hold")
	}
	h.b.inject(detachedEvent(bs, "B1"))
	if e := x.recvEnv(t); e.Method != "Target.detachedFromTarget" {
		t.Fatalf("got %s %s, want the detach and no answers", e.Method, e.RawID)
	}
	for _, s := range []string{"B1", "P2", "F2"} {
		if x.a.Owns(s) {
			t.Errorf("%s is still the agent's after its parent detached", s)
		}
	}
	wantError(t, x.call(t, 1, "P3", "Page.enable", ""), cdpmsg.CodeInvalidRequest, "in flight")
	x.attach(t, h, bs, "P4", "page")
	wantEcho(t, x.call(t, 1, "P4", "Page.enable", ""), "Page.enable", "P4")
	wantEcho(t, x.call(t, 1, "", "Page.enable", ""), "Page.enable", "")
}

// TestCrashedSession: a session whose renderer crashed and that then
// detaches gets no answer from the relay; one reloaded after the crash is
// answered by Chrome itself ("Target crashed"), and that answer is
// forwarded once.
func TestCrashedSession(t *testing.T) {
	h := newHarness(t)
	holdingBrowser(h)
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1})
	bs := x.a.BrowserSession()
	x.attach(t, h, bs, "S1", "page")
	x.attach(t, h, bs, "S2", "page")
	x.send(t, `{"id":1,"sessionId":"S1","method":"Wait.hold"}`)
	x.send(t, `{"id":1,"sessionId":"S2","method":"Wait.hold"}`)
	heldOn(t, h, "S1", "Wait.hold")
	c2 := heldOn(t, h, "S2", "Wait.hold")

	h.b.inject(string(cdpmsg.AppendEvent(nil, "S1", "Inspector.targetCrashed", []byte(`{}`))), detachedEvent(bs, "S1"))
	for _, m := range []string{"Inspector.targetCrashed", "Target.detachedFromTarget"} {
		if e := x.recvEnv(t); e.Method != m {
			t.Fatalf("got %s %s, want %s (and no answer)", e.Method, e.RawID, m)
		}
	}

	// S2 crashes and is reloaded: Chrome answers its command itself.
	h.b.inject(string(cdpmsg.AppendEvent(nil, "S2", "Inspector.targetCrashed", []byte(`{}`))),
		string(cdpmsg.AppendError(nil, c2.ID, "S2", cdpmsg.CodeServerError, "Target crashed")),
		string(cdpmsg.AppendEvent(nil, "S2", "Inspector.targetReloadedAfterCrash", []byte(`{}`))),
		detachedEvent(bs, "S2"))
	if e := x.recvEnv(t); e.Method != "Inspector.targetCrashed" {
		t.Fatalf("got %s, want the crash", e.Method)
	}
	e := x.recvEnv(t)
	wantReply(t, e, 1, "S2")
	wantError(t, e, cdpmsg.CodeServerError, "Target crashed")
	for _, m := range []string{"Inspector.targetReloadedAfterCrash", "Target.detachedFromTarget"} {
		if e := x.recvEnv(t); e.Method != m {
			t.Fatalf("got %s %s, want %s (and no second answer)", e.Method, e.RawID, m)
		}
	}
	wantEcho(t, x.call(t, 1, "", "Page.enable", ""), "Page.enable", "")
}

// TestOddIDsBlockNothing: ids an agent should not send (huge, negative, not
// integers, reused on another session) are answered and block none of its
// later commands, and nothing of them reaches another agent.
func TestOddIDsBlockNothing(t *testing.T) {
	h := newHarness(t)
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1})
	y := h.startAgent(t, AgentOptions{Name: "y", Rate: -1})
	x.attach(t, h, x.a.BrowserSession(), "S1", "page")
	for _, f := range []string{
		`{"id":9223372036854775807,"method":"Page.enable"}`,
		`{"id":9223372036854775807,"sessionId":"S1","method":"Page.enable"}`,
		`{"id":99999999999999999999,"method":"Page.enable"}`,
		`{"id":-1,"method":"Page.enable"}`,
		`{"id":1.5,"method":"Page.enable"}`,
		`{"id":"1","method":"Page.enable"}`,
		`{"id":0,"method":"Page.enable"}`,
		`{"id":0,"sessionId":"S1","method":"Page.enable"}`,
	} {
		x.send(t, f)
		if e := x.recvEnv(t); e.Method != "" {
			t.Fatalf("%s: got the event %s, want an answer", f, e.Method)
		}
	}
	for _, id := range []int64{0, 1, 9223372036854775807} {
		wantEcho(t, x.call(t, id, "", "Page.enable", ""), "Page.enable", "")
		wantEcho(t, x.call(t, id, "S1", "Page.enable", ""), "Page.enable", "S1")
	}
	select {
	case m := <-y.out:
		t.Fatalf("the other agent got %s", m)
	default:
	}
	wantEcho(t, y.call(t, 1, "", "Page.enable", ""), "Page.enable", "")
}

// TestInFlightBoundAcrossSessions: the in-flight bound counts every session
// of the connection together.
func TestInFlightBoundAcrossSessions(t *testing.T) {
	h := newHarness(t)
	holdingBrowser(h)
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Bounds: Bounds{MaxInFlight: 3}})
	bs := x.a.BrowserSession()
	x.attach(t, h, bs, "S1", "page")
	x.attach(t, h, bs, "S2", "page")
	for _, s := range []string{"S1", "S2", ""} {
		x.send(t, fmt.Sprintf(`{"id":1,"sessionId":%q,"method":"Wait.hold"}`, s))
	}
	h.b.waitCommand(t, "the third hold", func(e *cdpmsg.Envelope) bool { return e.Method == "Wait.hold" && e.SessionID == bs })
	wantError(t, x.call(t, 2, "S1", "Page.enable", ""), cdpmsg.CodeServerError, "in-flight bound: 3")
	h.b.inject(detachedEvent(bs, "S2"))
	if e := x.recvEnv(t); e.Method != "Target.detachedFromTarget" {
		t.Fatalf("got %s, want the detach", e.Method)
	}
	wantEcho(t, x.call(t, 2, "S1", "Page.enable", ""), "Page.enable", "S1")
}

// TestReplyOnCommandSession: a reply the browser sends without the
// command's sessionId (Chrome's "Session with given id not found" for a
// session it has just detached) reaches the agent on the session the
// command came on.
func TestReplyOnCommandSession(t *testing.T) {
	h := newHarness(t)
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		if e.Method != "Gone.m" {
			return nil, false
		}
		return [][]byte{cdpmsg.AppendError(nil, e.ID, "", -32001, "Session with given id not found.")}, true
	})
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1})
	x.attach(t, h, x.a.BrowserSession(), "S1", "page")
	e := x.call(t, 1, "S1", "Gone.m", "")
	wantReply(t, e, 1, "S1")
	wantError(t, e, -32001, "Session with given id not found")
	wantEcho(t, x.call(t, 1, "S1", "Page.enable", ""), "Page.enable", "S1")
}

// TestHangupSettlesInFlight: an agent that goes away with a command in
// flight has its reply hook see Chrome's error, so what the guard began
// for the command (the controls' record of an agent's input) ends with it.
func TestHangupSettlesInFlight(t *testing.T) {
	h := newHarness(t)
	holdingBrowser(h)
	hooked := make(chan string, 1)
	x := h.startAgent(t, AgentOptions{Name: "x", Rate: -1, Interceptor: hooks{intercept: func(_ context.Context, _ *Agent, c Command) Verdict {
		if c.Method != "Wait.hold" {
			return Verdict{}
		}
		return Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			hooked <- string(errRaw)
			return result, errRaw
		}}
	}}})
	x.send(t, `{"id":1,"method":"Wait.hold"}`)
	heldOn(t, h, x.a.BrowserSession(), "Wait.hold")
	x.hangup()
	if _, ok := x.waitServe(t); !ok {
		t.Fatal("Serve did not return")
	}
	select {
	case got := <-hooked:
		if !strings.Contains(got, "Inspected target navigated or closed") {
			t.Errorf("the hook saw %q, want Chrome's error", got)
		}
	default:
		t.Fatal("the reply hook of the command in flight never ran after the agent went away")
	}
}
