package relay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"go.uber.org/goleak"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// TestMain fails the package when a test leaves a goroutine behind: every
// agent and mux goroutine must end when its connection does.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait in these tests.
const wait = 5 * time.Second

var errKilled = errors.New("fake browser killed")

// responder scripts the fake browser: it returns the messages to send for a
// command, and false to fall back to the default answer.
type responder func(e *cdpmsg.Envelope) ([][]byte, bool)

// fakeBrowser is an in-memory relay.Transport. It answers
// Target.attachToBrowserTarget with a fresh session id and echoes every other
// command as {"id":N,"result":{"echo":METHOD},"sessionId":SAME}, as Chrome
// puts sessionId on replies. Messages are queued without bound, so the mux
// read loop never blocks on it and a writer never blocks on the mux.
type fakeBrowser struct {
	mu       sync.Mutex
	cond     *sync.Cond
	queue    [][]byte
	dead     bool
	sessions int
	seen     []*cdpmsg.Envelope
	respond  responder
}

func newFakeBrowser() *fakeBrowser {
	b := &fakeBrowser{}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// ReadMessage implements Transport.
func (b *fakeBrowser) ReadMessage() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.queue) == 0 && !b.dead {
		b.cond.Wait()
	}
	if b.dead {
		return nil, errKilled
	}
	msg := b.queue[0]
	b.queue[0] = nil
	b.queue = b.queue[1:]
	return msg, nil
}

// WriteMessage implements Transport: it records the command and queues the
// answer.
func (b *fakeBrowser) WriteMessage(msg []byte) error {
	e, err := cdpmsg.Decode(msg)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dead {
		return errKilled
	}
	if err != nil || !e.HasID || e.Method == "" {
		// The relay must only ever send well-formed commands.
		b.seen = append(b.seen, &cdpmsg.Envelope{Method: fmt.Sprintf("BAD(%q)", msg)})
		return nil
	}
	b.seen = append(b.seen, e)
	if b.respond != nil {
		if out, ok := b.respond(e); ok {
			b.queue = append(b.queue, out...)
			b.cond.Broadcast()
			return nil
		}
	}
	b.queue = append(b.queue, b.defaultAnswer(e))
	b.cond.Broadcast()
	return nil
}

func (b *fakeBrowser) defaultAnswer(e *cdpmsg.Envelope) []byte {
	if e.Method == "Target.attachToBrowserTarget" {
		b.sessions++
		res := fmt.Appendf(nil, `{"sessionId":"BS%d"}`, b.sessions)
		return cdpmsg.AppendResponse(nil, e.ID, e.SessionID, res, nil)
	}
	return echo(e)
}

// echo is the default answer to a command.
func echo(e *cdpmsg.Envelope) []byte {
	res := cdpmsg.AppendString([]byte(`{"echo":`), e.Method)
	res = append(res, '}')
	return cdpmsg.AppendResponse(nil, e.ID, e.SessionID, res, nil)
}

// Close implements Transport; it kills the connection.
func (b *fakeBrowser) Close() error { b.kill(); return nil }

// kill makes ReadMessage and WriteMessage fail from now on.
func (b *fakeBrowser) kill() {
	b.mu.Lock()
	b.dead = true
	b.cond.Broadcast()
	b.mu.Unlock()
}

// inject queues a message from the browser (an event or a late reply).
func (b *fakeBrowser) inject(msgs ...string) {
	b.mu.Lock()
	for _, m := range msgs {
		b.queue = append(b.queue, []byte(m))
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *fakeBrowser) setResponder(r responder) {
	b.mu.Lock()
	b.respond = r
	b.mu.Unlock()
}

// commands returns the commands received so far.
func (b *fakeBrowser) commands() []*cdpmsg.Envelope {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*cdpmsg.Envelope(nil), b.seen...)
}

// saw reports whether a command matching pred was received.
func (b *fakeBrowser) saw(pred func(e *cdpmsg.Envelope) bool) *cdpmsg.Envelope {
	for _, e := range b.commands() {
		if pred(e) {
			return e
		}
	}
	return nil
}

// waitCommand waits (bounded) for a command matching pred.
func (b *fakeBrowser) waitCommand(t testing.TB, what string, pred func(e *cdpmsg.Envelope) bool) *cdpmsg.Envelope {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if e := b.saw(pred); e != nil {
			return e
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("browser never received %s", what)
	return nil
}

func method(name string) func(e *cdpmsg.Envelope) bool {
	return func(e *cdpmsg.Envelope) bool { return e.Method == name }
}

var errPipeClosed = errors.New("pipe closed")

// pipe is an in-memory AgentConn: the relay uses its AgentConn methods, the
// test plays the agent with send, recv and hangup. Writes block until the
// agent reads, like a WebSocket to a peer that stopped reading.
type pipe struct {
	in     chan []byte // agent → relay
	out    chan []byte // relay → agent
	done   chan struct{}
	once   sync.Once
	code   int    // set when the relay closed the pipe
	reason string // idem
	byPeer bool   // the relay closed it
}

func newPipe() *pipe {
	return &pipe{in: make(chan []byte), out: make(chan []byte), done: make(chan struct{})}
}

// Read implements AgentConn.
func (p *pipe) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-p.in:
		return m, nil
	case <-p.done:
		return nil, errPipeClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements AgentConn.
func (p *pipe) Write(ctx context.Context, msg []byte) error {
	select {
	case p.out <- msg:
		return nil
	case <-p.done:
		return errPipeClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close implements AgentConn.
func (p *pipe) Close(code int, reason string) error {
	p.once.Do(func() {
		p.code, p.reason, p.byPeer = code, reason, true
		close(p.done)
	})
	return nil
}

// hangup is the agent closing its end.
func (p *pipe) hangup() { p.once.Do(func() { close(p.done) }) }

// closeInfo returns how the relay closed the pipe; call after done.
func (p *pipe) closeInfo() (code int, reason string, byRelay bool) {
	<-p.done
	return p.code, p.reason, p.byPeer
}

// send is the agent sending a message.
func (p *pipe) send(t testing.TB, msg string) {
	t.Helper()
	select {
	case p.in <- []byte(msg):
	case <-p.done:
		t.Fatalf("send %s: connection closed", msg)
	case <-time.After(wait):
		t.Fatalf("send %s: relay not reading", msg)
	}
}

// trySend sends unless the connection is closed or d passes.
func (p *pipe) trySend(msg string, d time.Duration) bool {
	select {
	case p.in <- []byte(msg):
		return true
	case <-p.done:
		return false
	case <-time.After(d):
		return false
	}
}

// recv is the agent reading the next message.
func (p *pipe) recv(t testing.TB) []byte {
	t.Helper()
	select {
	case m := <-p.out:
		return m
	case <-p.done:
		t.Fatalf("recv: connection closed")
	case <-time.After(wait):
		t.Fatalf("recv: nothing within %v", wait)
	}
	return nil
}

// recvEnv reads the next message and decodes it.
func (p *pipe) recvEnv(t testing.TB) *cdpmsg.Envelope {
	t.Helper()
	m := p.recv(t)
	e, err := cdpmsg.Decode(m)
	if err != nil {
		t.Fatalf("agent received undecodable %s: %v", m, err)
	}
	return e
}

// call sends a command and returns the reply, which must be next.
func (p *pipe) call(t testing.TB, id int64, session, method, params string) *cdpmsg.Envelope {
	t.Helper()
	p.send(t, string(cdpmsg.AppendCommand(nil, id, session, method, []byte(params))))
	e := p.recvEnv(t)
	if !e.HasID || e.ID != id || e.Method != "" {
		t.Fatalf("call %s: got %s%s, want reply id %d", method, e.RawID, string(cdpmsg.AppendEvent(nil, e.SessionID, e.Method, e.Params)), id)
	}
	return e
}

// wantEcho checks that a reply is the fake browser's echo of method.
func wantEcho(t testing.TB, e *cdpmsg.Envelope, method, session string) {
	t.Helper()
	want := string(cdpmsg.AppendString([]byte(`{"echo":`), method)) + "}"
	if string(e.Result) != want || e.SessionID != session || len(e.Error) != 0 {
		t.Fatalf("reply = result %s error %s session %q; want result %s session %q", e.Result, e.Error, e.SessionID, want, session)
	}
}

// wantError checks a CDP error reply and returns its message.
func wantError(t testing.TB, e *cdpmsg.Envelope, code int, contains string) string {
	t.Helper()
	var ce CallError
	if len(e.Error) == 0 || jsonv2.Unmarshal(e.Error, &ce) != nil {
		t.Fatalf("want an error reply, got result %s error %s", e.Result, e.Error)
	}
	if ce.Code != code || !strings.Contains(ce.Msg, contains) {
		t.Fatalf("error = %d %q; want %d containing %q", ce.Code, ce.Msg, code, contains)
	}
	return ce.Msg
}

// harness is one mux over a fake browser, with its read loop running.
type harness struct {
	b      *fakeBrowser
	m      *Mux
	runErr chan error
	events chan *cdpmsg.Envelope // the guard's events
}

func newHarness(t testing.TB) *harness {
	h := &harness{b: newFakeBrowser(), runErr: make(chan error, 1), events: make(chan *cdpmsg.Envelope, 1024)}
	h.m = NewMux(h.b, nil, func(e *cdpmsg.Envelope) {
		select {
		case h.events <- e:
		default:
		}
	})
	go func() { h.runErr <- h.m.Run() }()
	t.Cleanup(func() {
		h.b.kill()
		select {
		case <-h.runErr:
		case <-time.After(wait):
			t.Errorf("mux Run did not end after the browser died")
		}
	})
	return h
}

// agent is a running relay Agent with the test's end of its connection.
type agent struct {
	*pipe
	a     *Agent
	serve chan error
}

func (h *harness) startAgent(t testing.TB, opts AgentOptions) *agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p := newPipe()
	a, err := h.m.NewAgent(ctx, p, opts)
	if err != nil {
		t.Fatalf("NewAgent: %v", err)
	}
	ag := &agent{pipe: p, a: a, serve: make(chan error, 1)}
	go func() { ag.serve <- a.Serve(context.Background()) }()
	t.Cleanup(func() {
		ag.hangup()
		select {
		case <-ag.serve:
		case <-time.After(wait):
			t.Errorf("agent %s: Serve did not return after hangup", opts.Name)
		}
	})
	return ag
}

// waitServe waits (bounded) for Serve to return.
func (ag *agent) waitServe(t testing.TB) (error, bool) {
	t.Helper()
	select {
	case err := <-ag.serve:
		ag.serve <- err // for the cleanup
		return err, true
	case <-time.After(wait):
		return nil, false
	}
}

// hooks is a test's Hooks: the funcs it sets, the rest do nothing (a nil
// intercept forwards every command, a nil filter passes every event).
type hooks struct {
	intercept func(ctx context.Context, a *Agent, c Command) Verdict
	filter    func(a *Agent, e *cdpmsg.Envelope) bool
	cutOff    func(kind, reason string)
	throttled func()
	dropped   func(kind string)
	activity  func()
}

func (h hooks) Intercept(ctx context.Context, a *Agent, c Command) Verdict {
	if h.intercept == nil {
		return Verdict{}
	}
	return h.intercept(ctx, a, c)
}

func (h hooks) FilterEvent(a *Agent, e *cdpmsg.Envelope) bool {
	return h.filter == nil || h.filter(a, e)
}

func (h hooks) Activity() {
	if h.activity != nil {
		h.activity()
	}
}

func (h hooks) CutOff(kind, reason string) {
	if h.cutOff != nil {
		h.cutOff(kind, reason)
	}
}

func (h hooks) Throttled() {
	if h.throttled != nil {
		h.throttled()
	}
}

func (h hooks) Dropped(kind string) {
	if h.dropped != nil {
		h.dropped(kind)
	}
}

func (h hooks) BeforeDetach(*Agent) {}
