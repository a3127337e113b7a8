package relay

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

func attachedEvent(on, child, typ string) string {
	return fmt.Sprintf(`{"method":"Target.attachedToTarget","params":{"sessionId":%q,"targetInfo":{"targetId":"T-%s","type":%q},"waitingForDebugger":false},"sessionId":%q}`, child, child, typ, on)
}

func event(on, method string) string {
	return string(cdpmsg.AppendEvent(nil, on, method, []byte(`{"n":1}`)))
}

// TestIDRemappingTwoAgents runs two agents that use the same ids at the same
// time; each must get exactly its own replies.
func TestIDRemappingTwoAgents(t *testing.T) {
	h := newHarness(t)
	agents := []*agent{h.startAgent(t, AgentOptions{Name: "x"}), h.startAgent(t, AgentOptions{Name: "y"})}
	const n = 300
	var wg sync.WaitGroup
	for _, ag := range agents {
		name := ag.a.Name()
		wg.Go(func() {
			for i := range n {
				msg := fmt.Sprintf(`{"id":%d,"method":"%s.m%d"}`, i, name, i)
				if !ag.trySend(msg, wait) {
					t.Errorf("%s: send %d failed", name, i)
					return
				}
			}
		})
		wg.Go(func() {
			seen := map[int64]bool{}
			for range n {
				var m []byte
				select {
				case m = <-ag.out:
				case <-time.After(wait):
					t.Errorf("%s: only %d of %d replies", name, len(seen), n)
					return
				}
				e, err := cdpmsg.Decode(m)
				if err != nil || !e.HasID || e.SessionID != "" {
					t.Errorf("%s: bad reply %s (%v)", name, m, err)
					return
				}
				want := fmt.Sprintf(`{"echo":"%s.m%d"}`, name, e.ID)
				if string(e.Result) != want || seen[e.ID] {
					t.Errorf("%s: reply %s, want result %s once", name, m, want)
					return
				}
				seen[e.ID] = true
			}
		})
	}
	wg.Wait()
	ids := map[int64]string{}
	for _, e := range h.b.commands() {
		if prev, dup := ids[e.ID]; dup {
			t.Fatalf("browser id %d used for %s and %s", e.ID, prev, e.Method)
		}
		ids[e.ID] = e.Method
	}
}

// TestDefaultSessionStripped checks that the agent never sees its own
// browser session id, on replies or events, and that root and other agents'
// events do not reach it.
func TestDefaultSessionStripped(t *testing.T) {
	h := newHarness(t)
	x := h.startAgent(t, AgentOptions{Name: "x"})
	y := h.startAgent(t, AgentOptions{Name: "y"})
	bs := x.a.BrowserSession()
	if bs == "" || bs == y.a.BrowserSession() {
		t.Fatalf("browser sessions %q and %q", bs, y.a.BrowserSession())
	}

	r := x.call(t, 1, "", "Page.enable", "")
	wantEcho(t, r, "Page.enable", "")
	if c := h.b.saw(method("Page.enable")); c == nil || c.SessionID != bs {
		t.Fatalf("command went to session %+v, want %q", c, bs)
	}
	if strings.Contains(string(cdpmsg.AppendResponse(nil, r.ID, r.SessionID, r.Result, r.Error)), bs) {
		t.Fatalf("reply leaks the browser session")
	}
	// Naming the default session explicitly is allowed.
	wantEcho(t, x.call(t, 2, bs, "Page.enable", ""), "Page.enable", "")

	h.b.inject(`{"method":"Root.event","params":{}}`, event(y.a.BrowserSession(), "Other.event"), event(bs, "Own.event"))
	e := x.recvEnv(t)
	if e.Method != "Own.event" || e.SessionID != "" || string(e.Params) != `{"n":1}` || e.HasID {
		t.Fatalf("event = %+v", e)
	}
	if e := y.recvEnv(t); e.Method != "Other.event" || e.SessionID != "" {
		t.Fatalf("y event = %+v", e)
	}
	select {
	case g := <-h.events:
		if g.Method != "Root.event" {
			t.Fatalf("guard got %s", g.Method)
		}
	case <-time.After(wait):
		t.Fatal("root event did not reach the guard")
	}

	x.a.SendEvent("Guard.requestBlocked", []byte(`{"url":"http://x.test/"}`))
	if e := x.recvEnv(t); e.Method != "Guard.requestBlocked" || e.SessionID != "" {
		t.Fatalf("guard event = %+v", e)
	}
}

// TestChildSessionViaEvent covers a session announced by attachedToTarget:
// it becomes the agent's, other agents and unknown sessions are refused, and
// detachedFromTarget takes it away.
func TestChildSessionViaEvent(t *testing.T) {
	h := newHarness(t)
	x := h.startAgent(t, AgentOptions{Name: "x"})
	y := h.startAgent(t, AgentOptions{Name: "y"})
	bs := x.a.BrowserSession()

	h.b.inject(attachedEvent(bs, "C1", "page"))
	if e := x.recvEnv(t); e.Method != "Target.attachedToTarget" || e.SessionID != "" || !strings.Contains(string(e.Params), `"C1"`) {
		t.Fatalf("attach event = %+v", e)
	}
	if !x.a.Owns("C1") || x.a.IsBrowserSession("C1") || y.a.Owns("C1") {
		t.Fatal("C1 ownership wrong")
	}
	wantEcho(t, x.call(t, 2, "C1", "Runtime.enable", ""), "Runtime.enable", "C1")
	h.b.inject(event("C1", "Runtime.consoleAPICalled"))
	if e := x.recvEnv(t); e.Method != "Runtime.consoleAPICalled" || e.SessionID != "C1" {
		t.Fatalf("child event = %+v", e)
	}

	for _, s := range []string{"C1", "NOPE", bs, "\u0000"} {
		r := y.call(t, 3, s, "Runtime.evaluate", `{"expression":"1"}`)
		msg := wantError(t, r, cdpmsg.CodeServerError, "session")
		if !strings.Contains(msg, fmt.Sprintf("%q", s)) || r.SessionID != s {
			t.Fatalf("refusal for %q: %q on session %q", s, msg, r.SessionID)
		}
	}
	wantEcho(t, y.call(t, 4, "", "Page.enable", ""), "Page.enable", "")
	if h.b.saw(method("Runtime.evaluate")) != nil {
		t.Fatal("a refused command reached the browser")
	}

	h.b.inject(fmt.Sprintf(`{"method":"Target.detachedFromTarget","params":{"sessionId":"C1"},"sessionId":%q}`, bs))
	if e := x.recvEnv(t); e.Method != "Target.detachedFromTarget" {
		t.Fatalf("detach event = %+v", e)
	}
	wantError(t, x.call(t, 5, "C1", "Runtime.enable", ""), cdpmsg.CodeServerError, `"C1"`)
	wantEcho(t, x.call(t, 6, "", "Page.enable", ""), "Page.enable", "")
}

// TestChildSessionViaReply covers sessions from the agent's own
// Target.attachToTarget and Target.attachToBrowserTarget replies, and
// targets from Target.createTarget.
func TestChildSessionViaReply(t *testing.T) {
	h := newHarness(t)
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		switch e.Method {
		case "Target.attachToTarget":
			if strings.Contains(string(e.Params), "T-bad") {
				return [][]byte{cdpmsg.AppendResponse(nil, e.ID, e.SessionID, nil, []byte(`{"code":-32602,"message":"No target with given id found","data":{"sessionId":"C-bad"}}`))}, true
			}
			return [][]byte{cdpmsg.AppendResponse(nil, e.ID, e.SessionID, []byte(`{"sessionId":"C7"}`), nil)}, true
		case "Target.createTarget":
			return [][]byte{cdpmsg.AppendResponse(nil, e.ID, e.SessionID, []byte(`{"targetId":"T-new"}`), nil)}, true
		}
		return nil, false
	})
	x := h.startAgent(t, AgentOptions{Name: "x"})
	y := h.startAgent(t, AgentOptions{Name: "y"})

	r := x.call(t, 1, "", "Target.attachToTarget", `{"targetId":"T1","flatten":true}`)
	if string(r.Result) != `{"sessionId":"C7"}` || r.SessionID != "" {
		t.Fatalf("attach reply = %s on %q", r.Result, r.SessionID)
	}
	wantEcho(t, x.call(t, 2, "C7", "DOM.enable", ""), "DOM.enable", "C7")
	wantError(t, y.call(t, 2, "C7", "DOM.enable", ""), cdpmsg.CodeServerError, `"C7"`)

	r = x.call(t, 3, "", "Target.attachToTarget", `{"targetId":"T-bad","flatten":true}`)
	if len(r.Error) == 0 || x.a.Owns("C-bad") {
		t.Fatalf("failed attach: reply %s %s, owns C-bad %v", r.Result, r.Error, x.a.Owns("C-bad"))
	}

	r = x.call(t, 4, "", "Target.attachToBrowserTarget", "")
	var second string
	if _, err := fmt.Sscanf(string(r.Result), `{"sessionId":%q}`, &second); err != nil || !x.a.IsBrowserSession(second) {
		t.Fatalf("second browser session %s not owned as browser session (%v)", r.Result, err)
	}
	// Replies on a non-default browser session keep their sessionId.
	wantEcho(t, x.call(t, 5, second, "Target.getTargets", ""), "Target.getTargets", second)

	x.call(t, 6, "", "Target.createTarget", `{"url":"about:blank"}`)
	if c := x.a.Created(); len(c) != 1 || c[0] != "T-new" {
		t.Fatalf("Created = %v", c)
	}
	if len(y.a.Created()) != 0 {
		t.Fatalf("y.Created = %v", y.a.Created())
	}
}

// TestInterceptor covers Refuse, Local, Params and OnReply, and what the
// Interceptor is told.
func TestInterceptor(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var seen []Command
	x := h.startAgent(t, AgentOptions{Name: "x", Interceptor: hooks{intercept: func(_ context.Context, _ *Agent, c Command) Verdict {
		mu.Lock()
		seen = append(seen, c)
		mu.Unlock()
		switch c.Method {
		case "X.refuse":
			return Verdict{Refuse: "cdpguard: X.refuse is refused"}
		case "X.local":
			return Verdict{Local: []byte(`{"local":true}`)}
		case "X.localEmpty":
			return Verdict{Local: []byte{}}
		case "X.params":
			return Verdict{Params: []byte(`{"rewritten":1}`)}
		case "X.hook":
			return Verdict{OnReply: func(res, _ []byte) ([]byte, []byte) {
				return append(append([]byte(`{"hooked":`), res...), '}'), nil
			}}
		case "X.hookErr":
			return Verdict{OnReply: func([]byte, []byte) ([]byte, []byte) {
				return nil, []byte(`{"code":-32000,"message":"hooked"}`)
			}}
		}
		return Verdict{}
	}}})
	bs := x.a.BrowserSession()

	wantError(t, x.call(t, 1, "", "X.refuse", ""), cdpmsg.CodeServerError, "X.refuse is refused")
	if r := x.call(t, 2, "", "X.local", ""); string(r.Result) != `{"local":true}` || r.SessionID != "" {
		t.Fatalf("local = %s", r.Result)
	}
	if r := x.call(t, 3, "", "X.localEmpty", ""); string(r.Result) != `{}` {
		t.Fatalf("empty local = %s", r.Result)
	}
	wantEcho(t, x.call(t, 4, "", "X.params", `{"original":1}`), "X.params", "")
	if c := h.b.saw(method("X.params")); string(c.Params) != `{"rewritten":1}` {
		t.Fatalf("browser got params %s", c.Params)
	}
	if r := x.call(t, 5, "", "X.hook", ""); string(r.Result) != `{"hooked":{"echo":"X.hook"}}` {
		t.Fatalf("hooked = %s", r.Result)
	}
	wantError(t, x.call(t, 6, "", "X.hookErr", ""), cdpmsg.CodeServerError, "hooked")
	if h.b.saw(method("X.refuse")) != nil || h.b.saw(method("X.local")) != nil {
		t.Fatal("a refused or local command reached the browser")
	}

	h.b.inject(attachedEvent(bs, "C2", "page"))
	x.recvEnv(t)
	r := x.call(t, 7, "C2", "X.refuse", "")
	if wantError(t, r, cdpmsg.CodeServerError, "refused"); r.SessionID != "C2" {
		t.Fatalf("refusal on child session has session %q", r.SessionID)
	}
	x.call(t, 8, "C2", "X.other", `{"p":1}`)

	mu.Lock()
	defer mu.Unlock()
	first, last := seen[0], seen[len(seen)-1]
	if first.SessionID != bs || !first.Browser || first.Method != "X.refuse" {
		t.Fatalf("first command = %+v", first)
	}
	if last.SessionID != "C2" || last.Browser || string(last.Params) != `{"p":1}` {
		t.Fatalf("last command = %+v", last)
	}
}

// TestFilterEvent checks that a dropped event never reaches the agent and
// that a dropped attachedToTarget does not give the agent the session.
func TestFilterEvent(t *testing.T) {
	h := newHarness(t)
	var self *Agent
	var mu sync.Mutex
	x := h.startAgent(t, AgentOptions{Name: "x", Hooks: hooks{filter: func(a *Agent, e *cdpmsg.Envelope) bool {
		mu.Lock()
		self = a
		mu.Unlock()
		return e.Method != "Drop.me" && !strings.Contains(string(e.Params), "C-hidden")
	}}})
	bs := x.a.BrowserSession()
	h.b.inject(event(bs, "Drop.me"), attachedEvent(bs, "C-hidden", "page"), attachedEvent(bs, "C-shown", "page"), event(bs, "Keep.me"))
	if e := x.recvEnv(t); e.Method != "Target.attachedToTarget" || !strings.Contains(string(e.Params), "C-shown") {
		t.Fatalf("first event = %s %s", e.Method, e.Params)
	}
	if e := x.recvEnv(t); e.Method != "Keep.me" {
		t.Fatalf("second event = %s", e.Method)
	}
	if x.a.Owns("C-hidden") || !x.a.Owns("C-shown") {
		t.Fatal("filtered attach changed ownership")
	}
	wantError(t, x.call(t, 1, "C-hidden", "Runtime.enable", ""), cdpmsg.CodeServerError, `"C-hidden"`)
	h.b.inject(event("C-hidden", "Drop.me"), event("C-hidden", "Runtime.executionContextCreated"))
	wantEcho(t, x.call(t, 2, "C-shown", "Runtime.enable", ""), "Runtime.enable", "C-shown")
	mu.Lock()
	defer mu.Unlock()
	if self != x.a {
		t.Fatal("FilterEvent was not given the agent")
	}
}

// TestPageAgent covers a page connection (TargetID): commands without a
// session go to the page session, which is stripped from what the agent
// sees. The fake browser sends an event on the agent's browser session
// right after the attach reply, as Chrome may.
func TestPageAgent(t *testing.T) {
	h := newHarness(t)
	h.b.setResponder(func(e *cdpmsg.Envelope) ([][]byte, bool) {
		if e.Method != "Target.attachToTarget" {
			return nil, false
		}
		return [][]byte{
			cdpmsg.AppendResponse(nil, e.ID, e.SessionID, []byte(`{"sessionId":"P1"}`), nil),
			[]byte(event(e.SessionID, "Target.targetInfoChanged")),
		}, true
	})
	x := h.startAgent(t, AgentOptions{Name: "page", TargetID: "T9"})
	if c := h.b.saw(method("Target.attachToTarget")); c == nil || c.SessionID != x.a.BrowserSession() || !strings.Contains(string(c.Params), `"T9"`) {
		t.Fatalf("attach command = %+v", c)
	}
	if e := x.recvEnv(t); e.Method != "Target.targetInfoChanged" {
		t.Fatalf("event = %+v", e)
	}
	h.b.inject(event("P1", "Page.frameNavigated"))
	if e := x.recvEnv(t); e.Method != "Page.frameNavigated" || e.SessionID != "" {
		t.Fatalf("page event = %+v", e)
	}
	wantEcho(t, x.call(t, 1, "", "Page.navigate", `{"url":"about:blank"}`), "Page.navigate", "")
	if c := h.b.saw(method("Page.navigate")); c.SessionID != "P1" {
		t.Fatalf("page command went to %q", c.SessionID)
	}
}

// TestRateLimit: a flood gets CDP errors past the bucket, nothing past it
// reaches the browser, and the connection keeps working after a pause.
func TestRateLimit(t *testing.T) {
	// In a bubble time stands still while the relay works, so the flood
	// arrives in one instant however loaded the machine is: exactly the
	// burst (twice the rate) passes.
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		const rate = 100
		x := h.startAgent(t, AgentOptions{Name: "flood", Rate: rate})
		const n = 1000
		for i := 1; i <= n; i++ {
			x.send(t, fmt.Sprintf(`{"id":%d,"method":"Runtime.evaluate"}`, i))
		}
		limited := 0
		for i := 0; i < n; i++ {
			m := string(x.recv(t))
			if strings.Contains(m, "rate limit") {
				limited++
			}
		}
		if limited != n-2*rate {
			t.Fatalf("%d of %d commands were rate limited, want all but the burst of %d", limited, n, 2*rate)
		}
		// The bucket refills at the rate: 100 ms later, 10 more pass and
		// the 11th does not.
		time.Sleep(100 * time.Millisecond)
		for i := 1; i <= 11; i++ {
			x.send(t, fmt.Sprintf(`{"id":%d,"method":"Runtime.evaluate"}`, 5000+i))
			m := string(x.recv(t))
			if refused := strings.Contains(m, "rate limit"); refused != (i == 11) {
				t.Fatalf("after the flood, command %d: %s", i, m)
			}
		}
	})
}

// TestAutoAttachedBrowserSessionIsBrowserLevel: a browser-type session that
// arrives through auto-attach is judged as browser-level, so browser-only
// rules cannot be dodged by attaching to the browser a second way.
func TestAutoAttachedBrowserSessionIsBrowserLevel(t *testing.T) {
	h := newHarness(t)
	var got []Command
	var mu sync.Mutex
	x := h.startAgent(t, AgentOptions{Name: "x", Interceptor: hooks{intercept: func(ctx context.Context, a *Agent, c Command) Verdict {
		mu.Lock()
		got = append(got, c)
		mu.Unlock()
		return Verdict{Local: []byte("{}")}
	}}})
	h.b.inject(attachedEvent(x.a.BrowserSession(), "CB", "browser"))
	h.b.inject(attachedEvent(x.a.BrowserSession(), "CP", "page"))
	x.recv(t)
	x.recv(t)
	x.send(t, `{"id":1,"sessionId":"CB","method":"Fetch.enable"}`)
	x.send(t, `{"id":2,"sessionId":"CP","method":"Fetch.enable"}`)
	x.recv(t)
	x.recv(t)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || !got[0].Browser || got[1].Browser {
		t.Fatalf("commands seen: %+v; want the browser-type session judged browser-level and the page not", got)
	}
}
