package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// WebSocket close codes used when the guard ends an agent connection.
const (
	StatusNormal      = 1000
	StatusPolicy      = 1008 // the agent broke a rule badly enough to lose its connection
	StatusBrowserLost = 1011
)

// AgentConn is one agent's message connection (a WebSocket in production, an
// in-memory pipe in tests).
type AgentConn interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, msg []byte) error
	Close(code int, reason string) error
}

// CloseError, returned by AgentConn.Read, ends the agent's connection with
// its code and reason (for input the connection itself cannot carry, such
// as a binary WebSocket frame).
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string { return e.Reason }

// Interceptor judges each command of one agent before it is forwarded:
// the guard's command pipeline, bound to the agent when it was admitted
// (internal/admission), so the agent hands each command to it with no
// layer between. It runs on the agent's read goroutine and may block
// that agent only.
type Interceptor interface {
	Intercept(ctx context.Context, a *Agent, c Command) Verdict
}

// Hooks are the owner's side of one agent connection (the guard's
// admission of it, internal/admission) other than its commands: what
// judges its events, and what is told of its activity, its bounds and its
// end. None may close the agent.
type Hooks interface {
	// FilterEvent decides whether an event on one of the agent's sessions
	// reaches the agent. It runs on the mux read loop, before the relay
	// learns of sessions the event announces, and must not block.
	FilterEvent(a *Agent, e *cdpmsg.Envelope) bool
	// Activity is told that the agent sent a message, at most once a
	// second (the owner records activity by the second, for idle
	// disposal; a busy agent sends thousands of messages a second).
	Activity()
	// CutOff is told of an agent cut off by a byte or pause bound: kind is
	// one of the Cut* constants, reason the close reason. It may run on
	// the mux read loop and must not block; it runs before the agent's
	// connection is closed.
	CutOff(kind, reason string)
	// Throttled is called each time the guard stops reading the agent's
	// commands because its queue (or its user's) is over the
	// back-pressure mark.
	Throttled()
	// Dropped is told of a reply ("reply") or event ("event") over
	// Bounds.MaxMessage that the agent did not get.
	Dropped(kind string)
	// BeforeDetach runs once the agent's connection ended and before the
	// relay detaches its sessions: a detach Chrome cannot take at that
	// moment (a page stuck behind a dialog) is made safe first. It runs on
	// Serve's goroutine and must bound its own wait.
	BeforeDetach(a *Agent)
}

// AgentOptions configures an agent connection.
type AgentOptions struct {
	// Name identifies the agent in logs.
	Name string
	// TargetID, when set, makes this a page connection (/devtools/page/<id>):
	// commands without a sessionId go to that target.
	TargetID string
	// Interceptor, when set, judges the agent's commands; nil forwards
	// every command.
	Interceptor Interceptor
	// Hooks, when set, judge the agent's events and are told of what
	// happens to it; nil forwards every event.
	Hooks Hooks
	// Rate bounds the commands per second the agent may send on average,
	// with bursts of twice that; commands over it get a CDP error and never
	// reach the browser. Zero means 2000; negative means unlimited.
	Rate int
	// Share, when set, is shared by all connections of the agent's user: a
	// rate limit over them together, and a window of commands in flight in
	// the browser, so that one user's flood cannot delay the guard's
	// set-up of another user's targets by more than the window.
	Share *Share
	// Bounds are the byte bounds of what the guard holds for this agent
	// and its user (bytes.go); zero fields take the defaults.
	Bounds Bounds
}

// Agent is one agent connection relayed onto its own browser session.
type Agent struct {
	m         *Mux
	conn      AgentConn
	opts      AgentOptions
	browser   string // the agent's browser-level session
	def       string // session used for commands without sessionId
	q         *outQueue
	held      tally         // bytes queued for the agent (its share of Share.held)
	replyAvg  atomic.Int64  // running average of the agent's reply sizes (mux read loop only writes)
	replied   chan struct{} // one token: a reply arrived (for waitRoom)
	quit      chan struct{}
	closeMu   sync.Once
	closeErr  error
	closeCode int

	mu       sync.Mutex
	owned    map[string]bool          // sessions of this agent
	browsers map[string]bool          // browser-level sessions of this agent
	created  map[string]bool          // targets this agent created
	targets  map[string]sessionTarget // session → the target it is attached to
	inflight map[inflightKey]int64    // commands forwarded and not yet answered → browser id
	closed   bool
	// pauseTimer cuts the agent off if its queue stays over its mark
	pauseTimer *time.Timer

	// the token bucket of Rate; only the read goroutine touches it
	tokens float64
	refill time.Time
	// the unix second Hooks.Activity was last told; only the read
	// goroutine touches it
	lastActive int64
}

// NewAgent attaches a new browser session for conn. The caller then runs
// Serve.
func (m *Mux) NewAgent(ctx context.Context, conn AgentConn, opts AgentOptions) (*Agent, error) {
	opts.Bounds = opts.Bounds.withDefaults()
	if opts.Rate == 0 {
		opts.Rate = 2000
	}
	res, err := m.Call(ctx, "", "Target.attachToBrowserTarget", nil)
	if err != nil {
		return nil, fmt.Errorf("attach agent browser session: %w", err)
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := jsonv2.Unmarshal(res, &r); err != nil || r.SessionID == "" {
		return nil, fmt.Errorf("attach agent browser session: bad reply %s", res)
	}
	a := &Agent{
		m: m, conn: conn, opts: opts,
		browser: r.SessionID, def: r.SessionID,
		q:        newOutQueue(),
		replied:  make(chan struct{}, 1),
		quit:     make(chan struct{}),
		owned:    map[string]bool{r.SessionID: true},
		browsers: map[string]bool{r.SessionID: true},
		created:  map[string]bool{},
		targets:  map[string]sessionTarget{},
		inflight: map[inflightKey]int64{},
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrBrowserLost
	}
	m.sessions[r.SessionID] = a
	m.agents[a] = struct{}{}
	m.mu.Unlock()
	if opts.TargetID != "" {
		res, err := m.Call(ctx, a.browser, "Target.attachToTarget", map[string]any{"targetId": opts.TargetID, "flatten": true})
		if err != nil {
			a.cleanup()
			return nil, fmt.Errorf("attach to target %s: %w", opts.TargetID, err)
		}
		var t struct {
			SessionID string `json:"sessionId"`
		}
		if err := jsonv2.Unmarshal(res, &t); err != nil || t.SessionID == "" {
			a.cleanup()
			return nil, fmt.Errorf("attach to target %s: bad reply %s", opts.TargetID, res)
		}
		a.own(t.SessionID, false)
		a.mu.Lock()
		a.def = t.SessionID
		a.mu.Unlock()
	}
	return a, nil
}

// BrowserSession returns the agent's browser-level session id.
func (a *Agent) BrowserSession() string { return a.browser }

// Name returns the agent's name.
func (a *Agent) Name() string { return a.opts.Name }

// Serve relays until the agent or the browser goes away, then detaches the
// agent's session. It owns the agent's writer goroutine.
func (a *Agent) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // ends blocked reads and writes once the agent is closed
		defer wg.Done()
		select {
		case <-a.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	go func() { // the writer: the only goroutine that writes to conn
		defer wg.Done()
		a.writeLoop(ctx)
	}()
	err := a.readLoop(ctx)
	a.closeWith(StatusNormal, "")
	cancel()
	wg.Wait()
	if a.opts.Hooks != nil {
		a.opts.Hooks.BeforeDetach(a)
	}
	a.cleanup()
	return err
}

// writeLoop drains the agent's queue. It also performs the close, so that
// closeWith never blocks its caller (often the mux read loop) on a close
// handshake. A Write error that is a *CloseError closes with its code and
// reason (the connection's own write bound).
func (a *Agent) writeLoop(ctx context.Context) {
	defer func() {
		a.closeWith(StatusNormal, "")
		a.release(a.q.close())
		reason := ""
		if a.closeErr != nil {
			reason = a.closeErr.Error()
		}
		_ = a.conn.Close(a.closeCode, reason)
	}()
	for {
		msg, ok := a.q.pop()
		if !ok {
			select {
			case <-a.q.ready:
				continue
			case <-a.quit:
				return
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-a.quit:
			a.release(int64(len(msg)))
			return
		default:
		}
		err := a.conn.Write(ctx, msg)
		a.release(int64(len(msg)))
		if err != nil {
			var ce *CloseError
			if errors.As(err, &ce) {
				a.closeWith(ce.Code, ce.Reason)
			}
			return
		}
	}
}

func (a *Agent) readLoop(ctx context.Context) error {
	var e cdpmsg.Envelope
	for {
		if !a.waitRoom(ctx) {
			return a.closeErr
		}
		msg, err := a.conn.Read(ctx)
		select {
		case <-a.quit:
			return a.closeErr
		default:
		}
		if err != nil {
			var ce *CloseError
			if errors.As(err, &ce) {
				a.closeWith(ce.Code, ce.Reason)
			}
			return err
		}
		a.handle(ctx, msg, &e)
	}
}

func (a *Agent) handle(ctx context.Context, msg []byte, e *cdpmsg.Envelope) {
	if a.opts.Hooks != nil {
		if now := time.Now().Unix(); now != a.lastActive {
			a.lastActive = now
			a.opts.Hooks.Activity()
		}
	}
	if err := cdpmsg.DecodeInto(msg, e); err != nil {
		a.enqueue(cdpmsg.AppendError(nil, -1, "", cdpmsg.CodeParseError, cdpmsg.Refusal("", err.Error())))
		return
	}
	if !e.HasID || e.Method == "" {
		id := e.ID
		if !e.HasID {
			id = -1
		}
		a.enqueue(cdpmsg.AppendError(nil, id, e.SessionID, cdpmsg.CodeInvalidRequest, cdpmsg.Refusal(e.Method, "a command needs an integer id and a method")))
		return
	}
	a.mu.Lock()
	session := e.SessionID
	if session == "" {
		session = a.def
	}
	owned, browser := a.owned[session], a.browsers[session]
	key := inflightKey{session: session, id: e.ID}
	_, reused := a.inflight[key]
	busy := len(a.inflight) >= a.opts.Bounds.MaxInFlight && a.opts.Bounds.MaxInFlight > 0
	a.mu.Unlock()
	if reused {
		a.enqueue(cdpmsg.AppendError(nil, e.ID, e.SessionID, cdpmsg.CodeInvalidRequest, cdpmsg.Refusal(e.Method, fmt.Sprintf("id %d is already used by a command in flight on this session", e.ID))))
		return
	}
	if busy {
		a.enqueue(cdpmsg.AppendError(nil, e.ID, e.SessionID, cdpmsg.CodeServerError, cdpmsg.Refusal(e.Method, fmt.Sprintf("in-flight bound: %d commands of this connection are waiting for the browser", a.opts.Bounds.MaxInFlight))))
		return
	}
	if !owned {
		a.enqueue(cdpmsg.AppendError(nil, e.ID, e.SessionID, cdpmsg.CodeServerError, cdpmsg.Refusal(e.Method, fmt.Sprintf("session %q is not one of this connection's sessions", e.SessionID))))
		return
	}
	if !a.allow() {
		a.enqueue(cdpmsg.AppendError(nil, e.ID, e.SessionID, cdpmsg.CodeServerError, cdpmsg.Refusal(e.Method, fmt.Sprintf("rate limit: more than %d commands a second from this connection", a.opts.Rate))))
		return
	}
	if a.opts.Share != nil && !a.opts.Share.allow() {
		a.enqueue(cdpmsg.AppendError(nil, e.ID, e.SessionID, cdpmsg.CodeServerError, cdpmsg.Refusal(e.Method, fmt.Sprintf("rate limit: more than %d commands a second from this user", a.opts.Share.rate))))
		return
	}
	var v Verdict
	if a.opts.Interceptor != nil {
		v = a.opts.Interceptor.Intercept(ctx, a, Command{Method: e.Method, Params: e.Params, SessionID: session, Browser: browser})
	}
	switch {
	case v.Refuse != "":
		a.enqueue(cdpmsg.AppendError(nil, e.ID, e.SessionID, cdpmsg.CodeServerError, v.Refuse))
		return
	case v.Local != nil:
		a.enqueue(cdpmsg.AppendResponse(nil, e.ID, e.SessionID, v.Local, nil))
		return
	}
	params, method := e.Params, e.Method
	if v.Params != nil {
		params = v.Params
	}
	if v.Method != "" {
		method = v.Method
	}
	p := &pending{agent: a, origID: e.ID, session: session, method: method, hook: v.OnReply}
	if a.opts.Share != nil {
		p.slot = a.opts.Share.acquire(ctx, a.quit)
	}
	id, err := a.m.register(p)
	if err != nil {
		a.releaseSlot(p)
		a.enqueue(cdpmsg.AppendError(nil, e.ID, e.SessionID, cdpmsg.CodeServerError, cdpmsg.Refusal(e.Method, "browser connection lost")))
		return
	}
	// Counted in flight before it is written: its reply cannot come first.
	a.mu.Lock()
	a.inflight[key] = id
	a.mu.Unlock()
	if err := a.m.conn.WriteMessage(cdpmsg.AppendCommand(nil, id, session, method, params)); err != nil {
		if a.m.unregister(id) {
			a.releaseSlot(p)
		}
		a.doneID(key, id)
		a.enqueue(cdpmsg.AppendError(nil, e.ID, e.SessionID, cdpmsg.CodeServerError, cdpmsg.Refusal(e.Method, "browser connection lost")))
	}
}

// deliverReply is called from the mux read loop. The reply goes on the
// session the command came on, named as the agent named it: Chrome's
// "Session with given id not found" for a session it has just detached
// carries no sessionId, and the agent's ids are per session.
func (a *Agent) deliverReply(p *pending, e *cdpmsg.Envelope) {
	a.releaseSlot(p)
	result, errRaw := []byte(e.Result), []byte(e.Error)
	if p.hook != nil {
		result, errRaw = p.hook(result, errRaw)
	}
	if len(errRaw) == 0 {
		switch p.method {
		case "Target.attachToTarget", "Target.attachToBrowserTarget":
			var r struct {
				SessionID string `json:"sessionId"`
			}
			if jsonv2.Unmarshal(result, &r) == nil && r.SessionID != "" {
				a.own(r.SessionID, p.method == "Target.attachToBrowserTarget")
			}
		case "Target.createTarget":
			var r struct {
				TargetID string `json:"targetId"`
			}
			if jsonv2.Unmarshal(result, &r) == nil && r.TargetID != "" {
				a.mu.Lock()
				a.created[r.TargetID] = true
				a.mu.Unlock()
			}
		}
	}
	a.doneID(inflightKey{session: p.session, id: p.origID}, e.ID)
	n := int64(len(result) + len(errRaw))
	a.noteReply(n)
	if over(n, a.opts.Bounds.MaxMessage) {
		a.dropped("reply")
		a.enqueue(cdpmsg.AppendError(nil, p.origID, a.visible(p.session), cdpmsg.CodeServerError, cdpmsg.Refusal(p.method,
			fmt.Sprintf("message bound: the reply is %d MiB, over the %d MiB one message to an agent may be", n>>20, a.opts.Bounds.MaxMessage>>20))))
		return
	}
	a.enqueue(cdpmsg.AppendResponse(nil, p.origID, a.visible(p.session), result, errRaw))
}

// deliverEvent is called from the mux read loop.
func (a *Agent) deliverEvent(e *cdpmsg.Envelope) {
	pass := a.opts.Hooks == nil || a.opts.Hooks.FilterEvent(a, e)
	a.trackSessions(e, pass)
	if !pass {
		return
	}
	if over(int64(len(e.Params)), a.opts.Bounds.MaxMessage) {
		a.dropped("event")
		return
	}
	a.enqueue(cdpmsg.AppendEvent(nil, a.visible(e.SessionID), e.Method, e.Params))
}

// SendEvent sends an event of the guard's own (e.g. Guard.requestBlocked)
// to the agent on its default session.
func (a *Agent) SendEvent(method string, params []byte) {
	a.enqueue(cdpmsg.AppendEvent(nil, "", method, params))
}

// Created reports the targets this agent created with Target.createTarget.
func (a *Agent) Created() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]string, 0, len(a.created))
	for id := range a.created {
		ids = append(ids, id)
	}
	return ids
}

// visible hides the agent's default session id: the agent never named it.
func (a *Agent) visible(session string) string {
	a.mu.Lock()
	def := a.def
	a.mu.Unlock()
	if session == def {
		return ""
	}
	return session
}

// Close ends the agent connection with a reason.
func (a *Agent) Close(code int, reason string) { a.closeWith(code, reason) }

// closeWith ends the agent with code and reason; it reports whether this
// call did (the first close wins).
func (a *Agent) closeWith(code int, reason string) bool {
	return a.closeThen(code, reason, nil)
}

// closeThen is closeWith that, when this call is the one that closes, runs
// first (when not nil) before the agent's end is signalled.
func (a *Agent) closeThen(code int, reason string, first func()) bool {
	closed := false
	a.closeMu.Do(func() {
		closed = true
		if reason != "" {
			a.closeErr = errors.New(reason)
		}
		a.closeCode = code
		if first != nil {
			first()
		}
		close(a.quit)
	})
	return closed
}
