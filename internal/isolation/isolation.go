// Package isolation keeps one user's agent connections to that user's own
// targets, browser contexts and windows: it checks the ids an agent command
// names, rewrites context-wide commands onto the user's context, filters
// replies that list targets or contexts, and filters the target events an
// agent connection receives. Ownership itself (which context, target and
// window is whose) is the users registry's (internal/users); which rule a
// method gets is the firewall table's (firewall.Scope). This package is the
// logic between the two; cdpguard wires it to the relay.
package isolation

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Browser calls the browser on the guard's own root session (relay.Mux).
type Browser interface {
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
}

// Agent is what isolation asks of an agent connection (relay.Agent).
type Agent interface {
	// Owns reports whether session is one of the agent's sessions.
	Owns(sessionID string) bool
	// IsBrowserSession reports whether session is one of the agent's
	// browser-level sessions.
	IsBrowserSession(sessionID string) bool
	// SessionsOn returns the agent's sessions attached to targetID (and
	// the sessions that attached them): the relay's routing, which ends a
	// session with its detach, its parent's or its target's end.
	SessionsOn(targetID string) (sessions, parents []string)
}

// Scopes makes the params of users' browser contexts.
type Scopes interface {
	// ContextParams returns the Target.createBrowserContext params a
	// user's own new context gets: the agent's params with the guard's
	// proxy settings (an agent's own never get this far: the firewall
	// table refuses them). An error refuses the command with its text.
	ContextParams(u *users.User, in map[string]jsonv2.Value) (map[string]any, error)
}

// Targets knows the browser's own target.
type Targets interface {
	// BrowserTarget returns the browser's own target id, or "" while it
	// is not known (cdpguard learns it at start-up).
	BrowserTarget() string
}

// Options wires an Isolator to the guard.
type Options struct {
	// Users owns who owns what.
	Users *users.Registry
	// Browser answers Browser.getWindowForTarget for window ids not
	// learned yet.
	Browser Browser
	// Scopes gives a user's own new context its params (internal/scopes).
	Scopes Scopes
	// Targets knows the browser's own target (internal/targets).
	Targets Targets
	// Undo releases and detaches an agent's auto-attachment to a target it
	// may not hold: Runtime.runIfWaitingForDebugger on child when waiting,
	// then Target.detachFromTarget of child on parent. It is called from
	// the event filter, so it must queue the sends and never block.
	Undo func(parent, child string, waiting bool)
	// MaxTabs caps one user's open tabs and MaxContexts the browser
	// contexts one user may create (caps.go); <= 0 is no cap.
	MaxTabs, MaxContexts int
	// OnCap, when set, is told of every refusal of a cap (CapTabs,
	// CapContexts).
	OnCap func(capName string)
}

// Isolator applies isolation for every agent connection of one guard.
type Isolator struct{ o Options }

// New returns an Isolator. Every Options field is required but the caps
// and OnCap.
func New(o Options) *Isolator { return &Isolator{o: o} }

// Conn is one agent connection's isolation state: its user. Which targets
// it holds sessions to (so that the guard's own attachment to every target
// does not show through as "attached") is the relay's record of the
// agent's sessions (Agent.SessionsOn), which ends each with the session.
type Conn struct {
	User *users.User
}

// NewConn returns the state of a new connection of u.
func NewConn(u *users.User) *Conn { return &Conn{User: u} }

// attached reports whether agent a holds a session to targetID.
func attached(a Agent, targetID string) bool {
	sessions, _ := a.SessionsOn(targetID)
	return len(sessions) > 0
}

// Command applies the method's isolation columns of its firewall row
// (rule.Scope, rule.Cap) to one command of connection c: the user's caps
// hold, ids it names must be the user's, replies are filtered to the
// user's, and context-wide methods act on the user's context. It decides
// by the row, never by the method's name: the table is the one place that
// says which method gets which rule.
func (i *Isolator) Command(ctx context.Context, c *Conn, a Agent, cmd relay.Command, rule firewall.Rule) relay.Verdict {
	if v, refused := i.caps(c.User, cmd, rule.Cap); refused {
		return v
	}
	switch scope := rule.Scope; scope {
	case firewall.Targets, firewall.AttachTargets, firewall.WindowOfTarget, firewall.LeaveTarget:
		return i.target(c, a, cmd, scope)
	case firewall.Windows:
		return i.window(ctx, c.User, cmd)
	case firewall.ListTargets:
		return relay.Verdict{OnReply: i.filterTargets(c, a)}
	case firewall.ListContexts:
		return relay.Verdict{OnReply: i.filterContexts(c.User)}
	case firewall.CreateContexts:
		return i.createContext(c.User, cmd)
	case firewall.DisposeContexts:
		return i.disposeContext(c.User, cmd)
	case firewall.Contexts, firewall.BrowserContexts:
		return i.contextWide(c.User, cmd)
	}
	return relay.Verdict{}
}

// caps refuses a command that would take its user over the cap its
// firewall row names (firewall.Rule.Cap).
func (i *Isolator) caps(u *users.User, cmd relay.Command, capOf firewall.UserCap) (relay.Verdict, bool) {
	var err error
	switch capOf {
	case firewall.CapTabs:
		err = i.CheckTabs(u)
	case firewall.CapContexts:
		err = i.CheckContexts(u)
	}
	if err != nil {
		return refusal(cmd.Method, err.Error()), true
	}
	return relay.Verdict{}, false
}

// NotWebRefusal returns the refusal of a command (or endpoint) naming a
// target that is not web content, or "".
func (i *Isolator) NotWebRefusal(method, targetID string) string {
	if why := i.o.Users.NotWeb(targetID); why != "" {
		return cdpmsg.Refusal(method, fmt.Sprintf("target %s is not web content (%s): %s", targetID, why, firewall.WhyNotWeb))
	}
	return ""
}

// target refuses a command naming another user's target or another
// connection's session; scope is one of the Targets scopes.
func (i *Isolator) target(c *Conn, a Agent, cmd relay.Command, scope firewall.Scope) relay.Verdict {
	var p struct {
		TargetID  string `json:"targetId"`
		SessionID string `json:"sessionId"`
	}
	if err := unmarshalParams(cmd.Params, &p); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	if p.TargetID != "" && !i.o.Users.OwnsTarget(c.User, p.TargetID) {
		return refusal(cmd.Method, fmt.Sprintf("target %s is not in this user's browser context", p.TargetID))
	}
	if msg := i.NotWebRefusal(cmd.Method, p.TargetID); msg != "" && scope != firewall.LeaveTarget {
		return relay.Verdict{Refuse: msg}
	}
	if p.SessionID != "" && !a.Owns(p.SessionID) {
		return refusal(cmd.Method, fmt.Sprintf("session %s is not this connection's", p.SessionID))
	}
	if scope != firewall.WindowOfTarget {
		// An attach passed (AttachTargets) is the relay's to record.
		return relay.Verdict{}
	}
	// Learn the user's window ids from the replies about its targets.
	id := p.TargetID
	return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
		var r struct {
			WindowID int64 `json:"windowId"`
		}
		if id != "" && len(errRaw) == 0 && cdpmsg.UnmarshalBrowser(result, &r) == nil {
			i.o.Users.AddWindow(id, r.WindowID)
		}
		return result, errRaw
	}}
}

// window refuses a command naming a window that shows none of the user's
// targets. Window ids are learned from Browser.getWindowForTarget replies;
// an id not learned yet is looked up by asking the browser for the windows
// of the user's targets (this blocks the agent's own read goroutine only).
func (i *Isolator) window(ctx context.Context, u *users.User, cmd relay.Command) relay.Verdict {
	var p struct {
		WindowID *int64 `json:"windowId"`
	}
	if err := unmarshalParams(cmd.Params, &p); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	if p.WindowID == nil {
		return refusal(cmd.Method, "windowId is required, and must be a window of this user's targets")
	}
	w := *p.WindowID
	if i.o.Users.OwnsWindow(u, w) {
		return relay.Verdict{}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, t := range i.o.Users.Targets(u) {
		res, err := i.o.Browser.Call(ctx, "", "Browser.getWindowForTarget", map[string]any{"targetId": t})
		var r struct {
			WindowID int64 `json:"windowId"`
		}
		if err == nil && cdpmsg.UnmarshalBrowser(res, &r) == nil {
			i.o.Users.AddWindow(t, r.WindowID)
			if r.WindowID == w {
				return relay.Verdict{}
			}
		}
	}
	return refusal(cmd.Method, fmt.Sprintf("window %d is not a window of this user's targets", w))
}

// disposeContext lets a user dispose only contexts it created, never its
// default one.
func (i *Isolator) disposeContext(u *users.User, cmd relay.Command) relay.Verdict {
	id := stringParam(cmd.Params, "browserContextId")
	if id == u.Primary {
		return refusal(cmd.Method, "the user's default context is disposed by the guard when the user is idle")
	}
	if !i.o.Users.OwnsContext(u, id) {
		return refusal(cmd.Method, fmt.Sprintf("context %s is not this user's", id))
	}
	return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
		if len(errRaw) == 0 {
			i.o.Users.RemoveContext(id)
		}
		return result, errRaw
	}}
}

// createContext lets a user create contexts of its own, with the guard's
// proxy settings (the firewall table has already refused an agent's own).
func (i *Isolator) createContext(u *users.User, cmd relay.Command) relay.Verdict {
	var in map[string]jsonv2.Value
	if err := unmarshalParams(cmd.Params, &in); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	out, err := i.o.Scopes.ContextParams(u, in)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	params, err := jsonv2.Marshal(out)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Params: params, OnReply: func(result, errRaw []byte) ([]byte, []byte) {
		var r struct {
			BrowserContextID string `json:"browserContextId"`
		}
		if len(errRaw) == 0 && cdpmsg.UnmarshalBrowser(result, &r) == nil && r.BrowserContextID != "" {
			i.o.Users.AddContext(u, r.BrowserContextID)
		}
		return result, errRaw
	}}
}

// contextWide makes a context-wide method act on the user's context: a
// browserContextId must be the user's, and a missing one becomes the
// user's primary context (Chrome's default context is nobody's).
func (i *Isolator) contextWide(u *users.User, cmd relay.Command) relay.Verdict {
	var in map[string]jsonv2.Value
	if err := unmarshalParams(cmd.Params, &in); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	if raw, ok := in["browserContextId"]; ok {
		var id string
		if jsonv2.Unmarshal(raw, &id) != nil || !i.o.Users.OwnsContext(u, id) {
			return refusal(cmd.Method, fmt.Sprintf("browser context %s is not this user's", raw))
		}
		return relay.Verdict{}
	}
	out := maps.Clone(in)
	if out == nil {
		out = map[string]jsonv2.Value{}
	}
	idRaw, _ := jsonv2.Marshal(u.Primary)
	out["browserContextId"] = idRaw
	params, err := jsonv2.Marshal(out)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Params: params}
}

// refusal is the CDP error answer: it names the method and why.
func refusal(method, why string) relay.Verdict {
	return relay.Verdict{Refuse: cdpmsg.Refusal(method, why)}
}

// unmarshalParams decodes command params; absent params are an empty object.
func unmarshalParams(params []byte, v any) error {
	if len(params) == 0 {
		return nil
	}
	return jsonv2.Unmarshal(params, v)
}

func stringParam(params []byte, name string) string {
	var m map[string]jsonv2.Value
	if jsonv2.Unmarshal(params, &m) != nil {
		return ""
	}
	var s string
	_ = jsonv2.Unmarshal(m[name], &s)
	return s
}
