package cdpguard

import (
	"context"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// newAgents wires agent admission (internal/admission) to the guard:
// every agent, whatever its kind, is judged by the command pipeline
// (commandPipeline, pipeline.go), filtered by the hidden worlds and
// isolation, and forgotten by the dialogs and the controls when it goes
// (agentSide).
func (g *Guard) newAgents() *admission.Set {
	b := g.limits().Relay()
	b.Elsewhere = g.receiveBudget() // one budget: what is being received counts too
	return admission.New(admission.Deps{
		Guard:           agentSide{g},
		Pipeline:        commandPipeline{g},
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
// event filters live in the guard, above the features they call.
type agentSide struct{ g *Guard }

// Acquire holds the user of key, checking their group (acquireUser).
func (s agentSide) Acquire(ctx context.Context, key string) (*users.User, error) {
	return s.g.acquireUser(ctx, key)
}

// Filter hides the guard's worlds and what isolation keeps from the agent.
func (s agentSide) Filter(st *agentState, a *relay.Agent, e *cdpmsg.Envelope) bool {
	return !s.g.worlds.Hide(a, e) && s.g.iso.Event(st.Iso, a, e)
}

// BeforeDetach settles the agent's dialogs first: Chrome dies when a
// session with Page events leaves a page stuck behind a dialog.
func (s agentSide) BeforeDetach(a *relay.Agent) { s.g.dialogs.SettleOwner(s.g.ctx, a) }

// Dropped makes the dialogs and the controls forget the agent.
func (s agentSide) Dropped(a *relay.Agent) {
	s.g.dialogs.ForgetOwner(a)
	s.g.ctl.AgentGone(a)
}
