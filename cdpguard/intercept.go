package cdpguard

import (
	"context"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/rules"
	"github.com/cdpguard/cdpguard/internal/users"
)

// refuseParams refuses cmd if it carries one of rule.Params.
func refuseParams(cmd relay.Command, name string, rule firewall.Rule) relay.Verdict {
	if why := firewall.ParamRefusal(cmd.Params, rule); why != "" {
		return refusal(name, why)
	}
	return relay.Verdict{}
}

// newRuleStage wires the pipeline's last stage (internal/rules) to the
// guard: its policy, files, reader, dialogs, controls and browser.
func (g *Guard) newRuleStage() *rules.Stage {
	return rules.New(rules.Deps{
		Browser: func() rules.Browser {
			if g.mux == nil { // unit tests of the rules
				return nil
			}
			return g.mux
		},
		Decide:   g.decideFor,
		Sessions: g.targets,
		Blocked:  g.notifyBlock,
		Files:    g.files,
		Read:     g.guardRead,
		PolicyView: func(u *users.User) any {
			return g.policyViewFor(u.Key, g.scopes.OfUser(u))
		},
		Dialogs: func(ctx context.Context, a *relay.Agent, cmd relay.Command, action firewall.Action) relay.Verdict {
			return g.dialogs.Command(ctx, a, a.Name(), cmd, action, func() string { return g.targets.SessionTarget(ctx, a, cmd.SessionID) })
		},
		ControlsRefusal: func(kind firewall.ControlsRule, params []byte) string { return g.ctl.Refusal(kind, params) },
		Users:           g.users,
		Log:             g.log,
	})
}

// checkURL returns a refusal message for a /json/new URL an agent may never
// open.
func (g *Guard) checkURL(u string) string { return rules.URLRefusal("/json/new", u) }
