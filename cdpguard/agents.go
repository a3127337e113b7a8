package cdpguard

import (
	"context"
	"errors"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// agentSpec names one agent connection: who it is for and what it is.
type agentSpec struct {
	name     string // for logs: the remote address, or "mcp"
	key      string // the user key (session header value)
	targetID string // for /devtools/page/<id>; empty for browser connections
	user     *users.User
}

// admitAgent relays conn as one agent of s.user. Every kind of agent (a
// WebSocket client, the MCP tools' in-process connection) gets the same
// interceptor (firewall, isolation, refusal counting), event filter,
// per-user fairness share and registration, so no kind can skip a rule.
// The caller runs a.Serve and then calls dropAgent.
func (g *Guard) admitAgent(ctx context.Context, conn relay.AgentConn, s agentSpec) (*relay.Agent, error) {
	share, unshare := g.agents.shares.Acquire(s.key)
	st := &agentState{user: s.user, iso: isolation.NewConn(s.user), unshare: unshare}
	a, err := g.mux.NewAgent(ctx, conn, relay.AgentOptions{
		Name:     s.name,
		TargetID: s.targetID,
		FilterEvent: func(a *relay.Agent, e *cdpmsg.Envelope) bool {
			return !g.worlds.Hide(e) && g.iso.Event(st.iso, a, e)
		},
		OnActivity: func() { st.touch(g) },
		Share:      share,
		Bounds:     g.limits().Relay(),
		OnCutOff:   g.metrics.bounds.OnCutOff(g.log, s.name, s.key),
		OnThrottle: g.metrics.bounds.Throttled,
		OnDropped:  g.metrics.bounds.Dropped,
		Intercept: func(ctx context.Context, a *relay.Agent, cmd relay.Command) relay.Verdict {
			return g.countRefusal(cmd, g.intercept(ctx, a, st, cmd))
		},
	})
	if err != nil {
		unshare()
		return nil, err
	}
	g.agents.mu.Lock()
	g.agents.m[a] = st
	g.agents.mu.Unlock()
	g.log.Info("agent connected", "remote", s.name, "user", s.key, "target", s.targetID)
	return a, nil
}

// dropAgent forgets an agent whose Serve returned.
func (g *Guard) dropAgent(a *relay.Agent) {
	g.agents.mu.Lock()
	st := g.agents.m[a]
	delete(g.agents.m, a)
	g.agents.mu.Unlock()
	if st != nil {
		st.unshare()
	}
	g.dialogs.ForgetOwner(a)
	g.ctl.AgentGone(a)
}

// newIsolator wires per-user isolation (internal/isolation) to the guard:
// the users registry, the guard's browser session for window look-ups, the
// guard's proxy settings for the contexts users create, the browser's own
// target id, and the outbox goroutine for the browser sends an event
// filter decides on (it runs on the read loop and must not send itself).
func (g *Guard) newIsolator() *isolation.Isolator {
	return isolation.New(isolation.Options{
		Users:   g.users,
		Browser: muxCaller{g},
		ContextParams: func(u *users.User, in map[string]jsonv2.Value) (map[string]any, error) {
			sc := g.scopes.OfUser(u)
			if sc == nil || (g.proxyURL != "" && sc.ProxyURL() == "") {
				return nil, errors.New("this user's session has no egress proxy listener")
			}
			return g.contextParams(in, sc), nil
		},
		BrowserTarget: func() string {
			if b := g.about.target.Load(); b != nil {
				return *b
			}
			return ""
		},
		Undo: func(parent, child string, waiting bool) {
			g.fx.Add(func() {
				if waiting {
					_ = g.mux.Send(child, "Runtime.runIfWaitingForDebugger", nil)
				}
				_ = g.mux.Send(parent, "Target.detachFromTarget", map[string]any{"sessionId": child})
			})
		},
		MaxTabs:     g.limits().MaxTabs,
		MaxContexts: g.limits().MaxContexts,
		OnCap:       func(c string) { g.metrics.bounds.Capped(c) }, // read at each call: a Supervisor swaps g.metrics after newGuard
	})
}

// muxCaller calls the browser through the guard's mux, which exists only
// once the guard has started.
type muxCaller struct{ g *Guard }

// Call reads g.mux on every call rather than keeping it, because the
// isolator is built in newGuard, before start creates the mux.
func (m muxCaller) Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error) {
	return m.g.mux.Call(ctx, sessionID, method, params)
}
