// Package relay multiplexes one browser connection between the guard and any
// number of agents. Each agent gets its own browser-level session
// (Target.attachToBrowserTarget); its message ids are remapped onto one
// browser-wide counter and every reply and event is routed back by id or by
// sessionId. Only the envelope is decoded; params and results pass as bytes.
//
// Concurrency: one goroutine (Run) reads the browser connection and is the
// only writer of routing decisions for incoming messages; it never blocks on
// an agent, because each agent has its own bounded outgoing queue drained by
// that agent's writer goroutine, and an agent whose queue is full is
// disconnected. Writes to the browser come from many goroutines and are
// serialised by the transport.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// ErrBrowserLost is returned for calls that cannot complete because the
// browser connection is gone.
var ErrBrowserLost = errors.New("browser connection lost")

// CallError is a CDP error response to a guard call.
type CallError struct {
	Method string
	Code   int    `json:"code"`
	Msg    string `json:"message"`
}

func (e *CallError) Error() string {
	return fmt.Sprintf("%s: %s (%d)", e.Method, e.Msg, e.Code)
}

// Transport is one raw CDP connection to the browser.
type Transport interface {
	ReadMessage() ([]byte, error)
	WriteMessage(msg []byte) error
	Close() error
}

// GuardHandler receives the messages that belong to the guard: events on the
// root session and on sessions the guard attached itself. It is called from
// the read loop and must not block.
type GuardHandler func(e *cdpmsg.Envelope)

type reply struct {
	result jsonv2.Value
	err    error
}

// pending is what a browser-side id stands for.
type pending struct {
	agent   *Agent     // nil for guard calls
	origID  int64      // the agent's own id
	session string     // the browser session an agent command went to
	method  string     // for rewrites on reply
	ch      chan reply // guard calls; nil for fire-and-forget
	hook    replyHook  // optional agent-side rewrite of the reply
	slot    bool       // holds a slot of the agent's user's window
}

// replyHook may rewrite a reply before it reaches the agent; it returns the
// result and error bytes to send.
type replyHook func(result, errRaw []byte) ([]byte, []byte)

// Mux owns the browser connection.
type Mux struct {
	conn   Transport
	log    *slog.Logger
	guard  GuardHandler
	nextID atomic.Int64

	mu            sync.Mutex
	pending       map[int64]*pending
	guardSessions map[string]bool
	sessions      map[string]*Agent // agent-owned sessions, default ones included
	agents        map[*Agent]struct{}
	closed        bool

	held tally // bytes queued for every agent (Bounds.TotalMaxBytes)

	done chan struct{}
	err  error
}

// NewMux returns a Mux over conn. guard receives the guard's events.
func NewMux(conn Transport, log *slog.Logger, guard GuardHandler) *Mux {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Mux{
		conn:          conn,
		log:           log,
		guard:         guard,
		pending:       make(map[int64]*pending),
		guardSessions: make(map[string]bool),
		sessions:      make(map[string]*Agent),
		agents:        make(map[*Agent]struct{}),
		done:          make(chan struct{}),
	}
}

// Done is closed when the browser connection is lost or closed.
func (m *Mux) Done() <-chan struct{} { return m.done }

// Err returns why Run ended.
func (m *Mux) Err() error {
	<-m.done
	return m.err
}

// Run reads the browser connection until it fails. On return every pending
// call is failed and every agent is disconnected: there is never a relay
// without its guard.
func (m *Mux) Run() error {
	defer m.shutdown()
	for {
		msg, err := m.conn.ReadMessage()
		if err != nil {
			m.err = fmt.Errorf("%w: %w", ErrBrowserLost, err)
			return m.err
		}
		e, err := cdpmsg.DecodeBrowser(msg)
		if err != nil {
			m.log.Warn("undecodable message from browser", "err", err)
			continue
		}
		m.route(e)
	}
}

// Close closes the browser connection; Run then ends.
func (m *Mux) Close() error { return m.conn.Close() }

func (m *Mux) shutdown() {
	m.mu.Lock()
	m.closed = true
	pend := m.pending
	m.pending = map[int64]*pending{}
	agents := make([]*Agent, 0, len(m.agents))
	for a := range m.agents {
		agents = append(agents, a)
	}
	m.mu.Unlock()
	for _, p := range pend {
		if p.agent != nil {
			p.agent.releaseSlot(p)
		}
		if p.ch != nil {
			p.ch <- reply{err: ErrBrowserLost}
		}
	}
	for _, a := range agents {
		a.closeWith(StatusBrowserLost, "cdpguard: browser connection lost")
	}
	close(m.done)
}

func (m *Mux) route(e *cdpmsg.Envelope) {
	if e.HasID {
		m.mu.Lock()
		p := m.pending[e.ID]
		delete(m.pending, e.ID)
		m.mu.Unlock()
		if p == nil {
			return
		}
		if p.agent == nil {
			if p.ch != nil {
				p.ch <- guardReply(p.method, e)
			}
			return
		}
		p.agent.deliverReply(p, e)
		return
	}
	// An event: the two that make and end sessions are decoded here,
	// once, for the guard's books and the agent's (a reply needs neither).
	e.DecodeSessions()
	if e.SessionID == "" {
		m.trackGuardSession(e)
		m.guard(e)
		return
	}
	m.mu.Lock()
	isGuard := m.guardSessions[e.SessionID]
	a := m.sessions[e.SessionID]
	m.mu.Unlock()
	switch {
	case isGuard:
		m.trackGuardSession(e)
		m.guard(e)
	case a != nil:
		a.deliverEvent(e)
	}
}

// trackGuardSession records sessions the guard's own auto-attach creates.
// Browser-type attachments on the root are agents' browser sessions and are
// not the guard's.
func (m *Mux) trackGuardSession(e *cdpmsg.Envelope) {
	if p := e.Attached; p != nil && p.TargetInfo.Type != "browser" {
		m.mu.Lock()
		m.guardSessions[p.SessionID] = true
		m.mu.Unlock()
	}
	if d := e.Detached; d != nil {
		m.mu.Lock()
		delete(m.guardSessions, d.SessionID)
		m.mu.Unlock()
	}
}

func guardReply(method string, e *cdpmsg.Envelope) reply {
	if len(e.Error) > 0 {
		ce := &CallError{Method: method}
		if err := jsonv2.Unmarshal(e.Error, ce); err != nil {
			ce.Msg = string(e.Error)
		}
		return reply{err: ce}
	}
	return reply{result: e.Result}
}

// QueuedBytes returns the bytes queued for every agent.
func (m *Mux) QueuedBytes() int64 { return m.held.load() }

// heaviest returns the agent with the most bytes queued.
func (m *Mux) heaviest() *Agent {
	m.mu.Lock()
	defer m.mu.Unlock()
	var top *Agent
	var most int64 = -1
	for a := range m.agents {
		if n := a.held.load(); n > most {
			top, most = a, n
		}
	}
	return top
}

// register allocates a browser-side id for p.
func (m *Mux) register(p *pending) (int64, error) {
	id := m.nextID.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, ErrBrowserLost
	}
	m.pending[id] = p
	return id, nil
}

func (m *Mux) unregister(id int64) bool {
	m.mu.Lock()
	_, ok := m.pending[id]
	delete(m.pending, id)
	m.mu.Unlock()
	return ok
}

// Call sends a guard command and waits for its reply. params may be nil, a
// []byte of raw JSON, or a value to marshal.
func (m *Mux) Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error) {
	return m.Start(sessionID, method, params)(ctx)
}

// Start writes a guard command before it returns and gives the wait for its
// reply: commands whose order on the wire matters (a page's setup before
// its release, Runtime.runIfWaitingForDebugger) are written in order by
// one goroutine and awaited after. A command that could not be written
// returns its error from the wait.
func (m *Mux) Start(sessionID, method string, params any) (wait func(context.Context) (jsonv2.Value, error)) {
	raw, err := rawParams(params)
	if err != nil {
		return func(context.Context) (jsonv2.Value, error) { return nil, err }
	}
	p := &pending{method: method, ch: make(chan reply, 1)}
	id, err := m.register(p)
	if err != nil {
		return func(context.Context) (jsonv2.Value, error) { return nil, err }
	}
	if err := m.conn.WriteMessage(cdpmsg.AppendCommand(nil, id, sessionID, method, raw)); err != nil {
		m.unregister(id)
		err = fmt.Errorf("%s: %w: %w", method, ErrBrowserLost, err)
		return func(context.Context) (jsonv2.Value, error) { return nil, err }
	}
	return func(ctx context.Context) (jsonv2.Value, error) {
		select {
		case r := <-p.ch:
			return r.result, r.err
		case <-ctx.Done():
			m.unregister(id)
			return nil, fmt.Errorf("%s: %w", method, ctx.Err())
		}
	}
}

// Send sends a guard command whose reply is not awaited.
func (m *Mux) Send(sessionID, method string, params any) error {
	raw, err := rawParams(params)
	if err != nil {
		return err
	}
	id, err := m.register(&pending{method: method})
	if err != nil {
		return err
	}
	if err := m.conn.WriteMessage(cdpmsg.AppendCommand(nil, id, sessionID, method, raw)); err != nil {
		m.unregister(id)
		return fmt.Errorf("%s: %w: %w", method, ErrBrowserLost, err)
	}
	return nil
}

func rawParams(params any) ([]byte, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case []byte:
		return p, nil
	case jsonv2.Value:
		return p, nil
	default:
		b, err := jsonv2.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("marshal params: %w", err)
		}
		return b, nil
	}
}
