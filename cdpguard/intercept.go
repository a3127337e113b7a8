package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/rules"
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
		Browser:  muxCaller{g},
		Policy:   policyUsers{g},
		Sessions: g.targets,
		Agents:   g.agents,
		Files:    g.files,
		Reader:   g.rd,
		Dialogs:  g.dialogs,
		Controls: g.ctl, // nil when off: Refusal refuses nothing
		Users:    g.users,
		Log:      g.log,
	})
}

// checkURL returns a refusal message for a /json/new URL an agent may never
// open.
func (g *Guard) checkURL(u string) string { return rules.URLRefusal("/json/new", u) }
