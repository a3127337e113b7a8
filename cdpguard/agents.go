package cdpguard

import (
	"context"

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
	st := &agentState{user: s.user}
	a, err := g.mux.NewAgent(ctx, conn, relay.AgentOptions{
		Name:        s.name,
		TargetID:    s.targetID,
		FilterEvent: g.filterEvent(s.user, st),
		OnActivity:  func() { st.touch(g) },
		Share:       g.share(s.key),
		Intercept: func(ctx context.Context, a *relay.Agent, cmd relay.Command) relay.Verdict {
			return g.countRefusal(cmd, g.intercept(ctx, a, st, cmd))
		},
	})
	if err != nil {
		return nil, err
	}
	g.agentsMu.Lock()
	g.agents[a] = st
	g.agentsMu.Unlock()
	g.log.Info("agent connected", "remote", s.name, "user", s.key, "target", s.targetID)
	return a, nil
}

// dropAgent forgets an agent whose Serve returned.
func (g *Guard) dropAgent(a *relay.Agent) {
	g.agentsMu.Lock()
	st := g.agents[a]
	delete(g.agents, a)
	g.agentsMu.Unlock()
	g.dialogs.ForgetOwner(a)
	g.debuggerGone(st)
}
