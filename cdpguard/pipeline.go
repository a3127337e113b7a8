package cdpguard

import (
	"context"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/controls"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/worlds"
)

// commandPipeline runs every agent command through commandStages, whatever
// the agent's kind (admission.Pipeline).
type commandPipeline struct{ g *Guard }

// For binds the pipeline to an agent as it is admitted: the relay's agent
// hands each of its commands to the value returned (agentPipeline).
func (p commandPipeline) For(st *agentState) relay.Interceptor {
	return agentPipeline{g: p.g, st: st}
}

// agentPipeline is the pipeline of one admitted agent (st): the agent's
// relay.Interceptor.
type agentPipeline struct {
	g  *Guard
	st *agentState
}

// Intercept judges one agent command: the firewall's row of the command is
// looked up once, the stages run in order, and a refusal is counted by its
// row. Refusals name the rule; the connection stays usable.
func (p agentPipeline) Intercept(ctx context.Context, a *relay.Agent, cmd relay.Command) relay.Verdict {
	g, st := p.g, p.st
	c := &agentCommand{Command: cmd, agent: a, st: st, stages: commandStages[:]}
	c.rule, c.name = firewall.Lookup(cmd.Method, cmd.Browser)
	v := g.countRefusal(cmd, c.next(g, ctx))
	if v.Refuse != "" || cmd.Browser {
		// Debug: which methods clients send on the browser session, and
		// what the guard refused (e2e TestClients records them).
		g.log.Debug("agent command", "method", cmd.Method, "browserLevel", cmd.Browser, "refused", v.Refuse, "user", clip.String(st.User.Key))
	}
	return v
}

// countRefusal counts an agent command the guard refused, by the firewall
// row that refused it (firewall.RefusalLabel).
func (g *Guard) countRefusal(cmd relay.Command, v relay.Verdict) relay.Verdict {
	if v.Refuse != "" {
		g.metrics.CDPRefused.WithLabelValues(firewall.RefusalLabel(cmd.Method, cmd.Browser)).Inc()
	}
	return v
}

// commandStages is the one path of every agent command, in order. The
// firewall's row of the command is looked up once, before the first
// stage (agentPipeline.Intercept). Each stage either ends the command
// with its verdict (a refusal, a local answer, a rewrite that is the
// whole verdict) or calls c.next for the verdict of the stages after it
// and returns that, possibly combined with its own (relay.Combine). So a
// stage listed earlier sees the verdict of every stage after it: controls
// watch what really reaches the browser, worlds end their taint notes
// when a later stage refuses.
//
// The table is never modified; its order is the order of the rules.
var commandStages = [...]stage{
	{"controls", (*Guard).controlsStage},            // input, debugger: the human's quiet window (internal/controls/agents.go)
	{"browser target", (*Guard).browserTargetStage}, // attach to the browser's own target (internal/targets)
	{"worlds", (*Guard).worldsStage},                // the guard's hidden worlds (internal/worlds/refuse.go)
	{"firewall", (*Guard).refusalStage},             // the row's outright refusals, the reserved names
	{"isolation", (*Guard).isolationStage},          // the user's own targets and contexts (internal/isolation)
	{"rule", (*Guard).ruleStage},                    // the row's check or rewrite (internal/rules)
}

// stage is one step of commandStages.
type stage struct {
	name string
	run  func(g *Guard, ctx context.Context, c *agentCommand) relay.Verdict
}

// agentCommand is one agent command on its way through commandStages.
type agentCommand struct {
	relay.Command
	agent *relay.Agent
	st    *agentState
	rule  firewall.Rule
	name  string // the rule's name: the method, or the wildcard row it matched

	stages []stage // commandStages
	at     int     // the next stage to run
}

// next runs the stages after the current one and returns their verdict;
// after the last stage the command passes as it is.
func (c *agentCommand) next(g *Guard, ctx context.Context) relay.Verdict {
	if c.at >= len(c.stages) {
		return relay.Verdict{}
	}
	s := c.stages[c.at]
	c.at++
	return s.run(g, ctx, c)
}

// controlsStage shows the controls a command the later stages let
// through, as the firewall row's controls column says (Rule.Controls;
// internal/controls/agents.go): the input and debugger commands a grant
// depends on. Other rows, refused and locally answered commands pass.
func (g *Guard) controlsStage(ctx context.Context, c *agentCommand) relay.Verdict {
	v := c.next(g, ctx)
	if c.rule.Controls == firewall.CtlNone || v.Refuse != "" || v.Local != nil {
		return v
	}
	var user string
	if c.st.User != nil {
		user = c.st.User.Key
	}
	hook := g.ctl.AgentCommand(controls.Command{Agent: c.agent, User: user, Session: c.SessionID, Params: c.Params}, c.rule.Controls)
	if hook == nil {
		return v
	}
	return relay.Combine(relay.Verdict{OnReply: hook}, v)
}

// browserTargetStage turns an attach to the browser's own target (the
// AttachTarget row) into a browser session of the agent's own
// (targets.Record.AttachBrowser).
func (g *Guard) browserTargetStage(ctx context.Context, c *agentCommand) relay.Verdict {
	if c.rule.Action == firewall.AttachTarget {
		if v, done := g.targets.AttachBrowser(c.Command); done {
			return v
		}
	}
	return c.next(g, ctx)
}

// worldsStage refuses commands that name one of the guard's hidden worlds
// by context id (worlds.Worlds.Command; by name it is the firewall's
// RefuseReserved rows) and keeps the note of the context ids a passed
// command names until its reply (worlds.WithNamed).
func (g *Guard) worldsStage(ctx context.Context, c *agentCommand) relay.Verdict {
	wv := g.worlds.Command(ctx, c.agent, c.Command)
	if wv.Refuse != "" {
		return wv
	}
	return worlds.WithNamed(wv, c.next(g, ctx))
}

// refusalStage applies the row's outright refusals: the whole method, or
// the params it names.
func (g *Guard) refusalStage(ctx context.Context, c *agentCommand) relay.Verdict {
	switch c.rule.Action {
	case firewall.Refuse:
		return refusal(c.name, c.rule.Why)
	case firewall.RefuseParams:
		if v := refuseParams(c.Command, c.name, c.rule); v.Refuse != "" {
			return v
		}
	case firewall.RefuseReserved:
		if why := firewall.ReservedRefusal(c.Params, c.rule.Params); why != "" {
			return refusal(c.name, why)
		}
	}
	return c.next(g, ctx)
}

// isolationStage keeps the command to the user's own targets, contexts and
// windows; the later stages see the params it produced (e.g. with the
// user's browserContextId). A row with no isolation column (no ids, no
// cap: Rule.Isolated) has nothing for isolation to check.
func (g *Guard) isolationStage(ctx context.Context, c *agentCommand) relay.Verdict {
	if !c.rule.Isolated() {
		return c.next(g, ctx)
	}
	iso := g.iso.Command(ctx, c.st.Iso, c.agent, c.Command, c.rule)
	if iso.Refuse != "" || iso.Local != nil {
		return iso
	}
	if iso.Params != nil {
		c.Params = iso.Params
	}
	return relay.Combine(iso, c.next(g, ctx))
}

// ruleStage applies the row's check or rewrite (internal/rules). It is the last
// stage: its verdict is the whole verdict of the stages after isolation. A
// command with no row, or a row that passes it (Pass), has none.
func (g *Guard) ruleStage(ctx context.Context, c *agentCommand) relay.Verdict {
	if c.rule.Action == firewall.Pass {
		return relay.Verdict{}
	}
	return g.rs.Apply(ctx, c.agent, c.st, c.Command, c.name, c.rule)
}
