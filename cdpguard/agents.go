package cdpguard

import (
	"context"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// newAgents wires agent admission (internal/admission) to the guard:
// every agent, whatever its kind, is filtered by the hidden worlds and
// isolation, judged by the command pipeline (intercept) with its refusals
// counted, and forgotten by the dialogs and the controls when it goes.
func (g *Guard) newAgents() *admission.Set {
	return admission.New(admission.Deps{
		Filter: func(st *agentState, a *relay.Agent, e *cdpmsg.Envelope) bool {
			return !g.worlds.Hide(e) && g.iso.Event(st.Iso, a, e)
		},
		Intercept: func(ctx context.Context, a *relay.Agent, st *agentState, cmd relay.Command) relay.Verdict {
			return g.countRefusal(cmd, g.intercept(ctx, a, st, cmd))
		},
		Users: g.users,
		Bounds: func() relay.Bounds {
			b := g.limits().Relay()
			b.Elsewhere = g.receiveBudget().Held // one budget: what is being received counts too
			return b
		},
		Metrics: func() *bounds.Metrics { return g.metrics.Bounds },
		OnDrop: func(a *relay.Agent) {
			g.dialogs.ForgetOwner(a)
			g.ctl.AgentGone(a)
		},
		// Chrome dies when a session with Page events leaves a page stuck
		// behind a dialog: the dialogs settle first.
		BeforeDetach:    func(a *relay.Agent) { g.dialogs.SettleOwner(g.ctx, a) },
		Log:             g.log,
		Ready:           g.ready.Load,
		Enter:           g.enter,
		Exit:            g.wg.Done,
		Ctx:             g.ctx,
		Mux:             func() *relay.Mux { return g.mux },
		Acquire:         g.acquireUser,
		MaxConnsPerUser: g.maxConnsPerUser,
	})
}

// intercept judges one agent command: it runs the command through
// commandStages (pipeline.go). Refusals name the rule; the connection stays
// usable.
func (g *Guard) intercept(ctx context.Context, a *relay.Agent, st *agentState, cmd relay.Command) relay.Verdict {
	v := g.judgeCommand(ctx, a, st, cmd)
	if v.Refuse != "" || cmd.Browser {
		// Debug: which methods clients send on the browser session, and
		// what the guard refused (e2e TestClients records them).
		g.log.Debug("agent command", "method", cmd.Method, "browserLevel", cmd.Browser, "refused", v.Refuse, "user", clip.String(st.User.Key))
	}
	return v
}
