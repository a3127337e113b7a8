package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/target"
)

// ErrClosed is returned by calls on a connection the guard closed (browser
// restart, idle disposal, guard shutdown) or the tools closed.
var ErrClosed = errors.New("the browser connection was closed")

// Pipe is an in-process agent connection: the guard relays its AgentSide
// exactly as it relays a WebSocket agent (relay, firewall, user
// isolation), and the MCP tools drive it as a CDP client. No socket is
// involved.
type Pipe struct {
	toGuard chan []byte   // commands, read by the guard's relay
	quit    chan struct{} // closed once, by Close from either side
	once    sync.Once

	mu      sync.Mutex
	nextID  int64
	pending map[int64]call
	closeBy string
	onEvent func(session target.SessionID, ev any)
	subs    map[subKey]map[*sub]struct{}
}

type subKey struct {
	session target.SessionID
	method  string
}

// call is a command in flight: where its reply goes and the session it
// went to (a session that detaches ends its calls: Chrome never answers
// them).
type call struct {
	ch      chan reply
	session target.SessionID
}

// ErrTargetClosed ends a call whose session detached before the browser
// answered it (the tab closed or crashed), as a CDP client ends it when
// told of the detach: Chrome drops such a command without an answer.
var ErrTargetClosed = errors.New("the tab closed before the browser answered")

type sub struct{ ch chan jsonv2.Value }

type reply struct {
	result []byte
	err    error
}

// NewPipe returns an open pipe. onEvent receives every event the guard
// passes to this agent, decoded once into its cdproto type (see
// decodeEvent); it runs on the guard's writer for this agent and must not
// call back into the pipe synchronously.
func NewPipe(onEvent func(session target.SessionID, ev any)) *Pipe {
	return &Pipe{toGuard: make(chan []byte), quit: make(chan struct{}), pending: map[int64]call{}, onEvent: onEvent, subs: map[subKey]map[*sub]struct{}{}}
}

// AgentSide is the guard's end of the pipe; it satisfies relay.AgentConn.
func (p *Pipe) AgentSide() *AgentSide { return &AgentSide{p: p} }

// Done is closed when the pipe is closed.
func (p *Pipe) Done() <-chan struct{} { return p.quit }

// Close closes the pipe; calls in flight fail with ErrClosed.
func (p *Pipe) Close() { p.close("") }

func (p *Pipe) close(reason string) {
	p.once.Do(func() {
		p.mu.Lock()
		p.closeBy = reason
		for id, c := range p.pending {
			c.ch <- reply{err: p.closedErr()}
			delete(p.pending, id)
		}
		p.mu.Unlock()
		close(p.quit)
	})
}

// closedErr must be called with p.mu held.
func (p *Pipe) closedErr() error {
	if p.closeBy != "" {
		return fmt.Errorf("%w (%s)", ErrClosed, p.closeBy)
	}
	return ErrClosed
}

// Call sends one CDP command on session ("" is the agent's browser
// session) and decodes its result into res (when non-nil).
func (p *Pipe) Call(ctx context.Context, session target.SessionID, method string, params, res any) error {
	msg := map[string]any{"method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	ch := make(chan reply, 1)
	p.mu.Lock()
	select {
	case <-p.quit:
		err := p.closedErr()
		p.mu.Unlock()
		return err
	default:
	}
	p.nextID++
	id := p.nextID
	p.pending[id] = call{ch: ch, session: session}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, id)
		p.mu.Unlock()
	}()
	msg["id"] = id
	b, err := jsonv2.Marshal(msg)
	if err != nil {
		return fmt.Errorf("%s: encode params: %w", method, err)
	}
	select {
	case p.toGuard <- b:
	case <-p.quit:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.closedErr()
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		if res != nil && len(r.result) > 0 {
			if err := jsonv2.Unmarshal(r.result, res, browserJSON); err != nil {
				return fmt.Errorf("%s: decode result: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// CDPError is an error reply of the browser or the guard.
type CDPError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

func (e *CDPError) Error() string { return e.Message }

// Subscribe buffers the events of method on session until cancel. Events
// beyond the buffer are dropped: waiters look for one event, not a stream.
func (p *Pipe) Subscribe(session target.SessionID, method string) (<-chan jsonv2.Value, func()) {
	s := &sub{ch: make(chan jsonv2.Value, 64)}
	k := subKey{session, method}
	p.mu.Lock()
	if p.subs[k] == nil {
		p.subs[k] = map[*sub]struct{}{}
	}
	p.subs[k][s] = struct{}{}
	p.mu.Unlock()
	return s.ch, func() {
		p.mu.Lock()
		delete(p.subs[k], s)
		if len(p.subs[k]) == 0 {
			delete(p.subs, k)
		}
		p.mu.Unlock()
	}
}

// Session is one CDP session over the pipe; it satisfies cdp.Session, so
// the typed cdproto commands run on it.
type Session struct {
	p  *Pipe
	ID target.SessionID
}

// Call runs one command on the session.
func (s Session) Call(ctx context.Context, method string, params, res any) error {
	return s.p.Call(ctx, s.ID, method, params, res)
}

// Subscribe buffers the session's events of method.
func (s Session) Subscribe(method string) (<-chan jsonv2.Value, func()) {
	return s.p.Subscribe(s.ID, method)
}

// deliver routes one message from the guard.
func (p *Pipe) deliver(msg []byte) {
	var m struct {
		ID        *int64             `json:"id"`
		SessionID target.SessionID   `json:"sessionId"`
		Method    cdproto.MethodType `json:"method"`
		Params    jsonv2.Value       `json:"params"`
		Result    jsonv2.Value       `json:"result"`
		Error     *CDPError          `json:"error"`
	}
	if err := jsonv2.Unmarshal(msg, &m, browserJSON); err != nil {
		return
	}
	if m.ID == nil {
		if m.Method == "" {
			return
		}
		// Decoded once, here, as chromedp's Target does: the subscribers
		// keep the raw params they wait on, everything else sees the
		// typed event. An event this cdproto does not know (an older
		// Chrome's) is dropped.
		ev, err := decodeEvent(m.Method, m.Params)
		p.mu.Lock()
		if d, ok := ev.(*target.EventDetachedFromTarget); ok {
			p.endCalls(d.SessionID)
		}
		for s := range p.subs[subKey{m.SessionID, string(m.Method)}] {
			select {
			case s.ch <- jsonv2.Value(m.Params):
			default:
			}
		}
		p.mu.Unlock()
		if err == nil && p.onEvent != nil {
			p.onEvent(m.SessionID, ev)
		}
		return
	}
	p.mu.Lock()
	c, ok := p.pending[*m.ID]
	delete(p.pending, *m.ID)
	p.mu.Unlock()
	if !ok {
		return
	}
	ch := c.ch
	if m.Error != nil {
		ch <- reply{err: m.Error}
		return
	}
	ch <- reply{result: m.Result}
}

// AgentSide is the guard's end of a Pipe (relay.AgentConn).
type AgentSide struct{ p *Pipe }

// Read returns the next command of the tools.
func (a *AgentSide) Read(ctx context.Context) ([]byte, error) {
	select {
	case b := <-a.p.toGuard:
		return b, nil
	case <-a.p.quit:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write delivers a reply or event to the tools.
func (a *AgentSide) Write(ctx context.Context, msg []byte) error {
	select {
	case <-a.p.quit:
		return ErrClosed
	default:
	}
	a.p.deliver(msg)
	return nil
}

// Close ends the pipe; the reason reaches the tools' next call.
func (a *AgentSide) Close(code int, reason string) error {
	if reason == "" {
		reason = fmt.Sprintf("closed by the guard, code %d", code)
	}
	a.p.close(reason)
	return nil
}

// endCalls ends the calls in flight on session, which the browser
// detached, with ErrTargetClosed. p.mu is held.
func (p *Pipe) endCalls(session target.SessionID) {
	if session == "" {
		return
	}
	for id, c := range p.pending {
		if c.session == session {
			c.ch <- reply{err: ErrTargetClosed} // buffered: one reply each
			delete(p.pending, id)
		}
	}
}

// browserJSON is how the pipe reads what comes from the browser: Chrome
// writes a page's string cut inside an emoji as a lone surrogate escape
// ("x\ud800y"), which strict JSON refuses; read strictly, such a reply
// never answered its call and such an event (an alert's message) never
// reached the tools. The string reads with U+FFFD.
var browserJSON = jsonv2.AllowInvalidUTF8(true)

// decodeEvent decodes one event's params into its cdproto type
// (*page.EventJavascriptDialogOpening, ...), as chromedp does where its
// events enter, or into *blockEntry for the guard's own Guard.requestBlocked,
// a domain cdproto does not know. The tools dispatch on the type.
func decodeEvent(method cdproto.MethodType, params jsonv2.Value) (any, error) {
	if method == "Guard.requestBlocked" {
		b := new(blockEntry)
		if err := jsonv2.Unmarshal(params, b, browserJSON); err != nil {
			return nil, fmt.Errorf("decode %s: %w", method, err)
		}
		return b, nil
	}
	return cdproto.UnmarshalMessage(&cdproto.Message{Method: method, Params: params}, browserJSON)
}
