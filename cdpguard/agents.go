package cdpguard

import (
	"context"

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
		OnCutOff:   g.metrics.Bounds.OnCutOff(g.log, s.name, s.key),
		OnThrottle: g.metrics.Bounds.Throttled,
		OnDropped:  g.metrics.Bounds.Dropped,
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

// intercept judges one agent command: it runs the command through
// commandStages (pipeline.go). Refusals name the rule; the connection stays
// usable.
func (g *Guard) intercept(ctx context.Context, a *relay.Agent, st *agentState, cmd relay.Command) relay.Verdict {
	v := g.judgeCommand(ctx, a, st, cmd)
	if v.Refuse != "" || cmd.Browser {
		// Debug: which methods clients send on the browser session, and
		// what the guard refused (e2e TestClients records them).
		g.log.Debug("agent command", "method", cmd.Method, "browserLevel", cmd.Browser, "refused", v.Refuse, "user", st.user.Key)
	}
	return v
}
