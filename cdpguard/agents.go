package cdpguard

import (
	"context"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// newAgents wires agent admission (internal/admission) to the guard:
// every agent, whatever its kind, is filtered by the hidden worlds and
// isolation, judged by the command pipeline (intercept) with its refusals
// counted, and forgotten by the dialogs and the controls when it goes
// (agentSide).
func (g *Guard) newAgents() *admission.Set {
	b := g.limits().Relay()
	b.Elsewhere = g.receiveBudget().Held // one budget: what is being received counts too
	return admission.New(admission.Deps{
		Guard:           agentSide{g},
		Users:           g.users,
		Bounds:          b,
		Metrics:         g.metrics.Bounds,
		Log:             g.log,
		Life:            (*guardLife)(&g.lifecycle),
		Ctx:             g.ctx,
		Browser:         muxCaller{g},
		MaxConnsPerUser: g.maxConnsPerUser(),
	})
}

// agentSide is the guard's side of every agent (admission.Guard): the
// command pipeline and the event filters live in the guard, above the
// features they call.
type agentSide struct{ g *Guard }

// Acquire holds the user of key, checking their group (acquireUser).
func (s agentSide) Acquire(ctx context.Context, key string) (*users.User, error) {
	return s.g.acquireUser(ctx, key)
}

// Filter hides the guard's worlds and what isolation keeps from the agent.
func (s agentSide) Filter(st *agentState, a *relay.Agent, e *cdpmsg.Envelope) bool {
	return !s.g.worlds.Hide(e) && s.g.iso.Event(st.Iso, a, e)
}

// Intercept runs the command pipeline and counts its refusals.
func (s agentSide) Intercept(ctx context.Context, a *relay.Agent, st *agentState, cmd relay.Command) relay.Verdict {
	return s.g.countRefusal(cmd, s.g.intercept(ctx, a, st, cmd))
}

// BeforeDetach settles the agent's dialogs first: Chrome dies when a
// session with Page events leaves a page stuck behind a dialog.
func (s agentSide) BeforeDetach(a *relay.Agent) { s.g.dialogs.SettleOwner(s.g.ctx, a) }

// Dropped makes the dialogs and the controls forget the agent.
func (s agentSide) Dropped(a *relay.Agent) {
	s.g.dialogs.ForgetOwner(a)
	s.g.ctl.AgentGone(a)
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
