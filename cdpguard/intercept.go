package cdpguard

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// refuseParams refuses cmd if it carries one of rule.Params.
func refuseParams(cmd relay.Command, name string, rule firewall.Rule) relay.Verdict {
	if why := firewall.ParamRefusal(cmd.Params, rule); why != "" {
		return refusal(name, why)
	}
	return relay.Verdict{}
}

func (g *Guard) applyRule(ctx context.Context, a *relay.Agent, st *agentState, cmd relay.Command, name string, rule firewall.Rule) relay.Verdict {
	switch rule.Action {
	case firewall.CheckURL, firewall.CheckNavigation:
		u, err := urlParam(cmd.Params)
		if err != nil {
			return refusal(name, "unreadable params: "+err.Error())
		}
		if msg := urlRefusal(name, u); msg != "" {
			if rule.Action == firewall.CheckNavigation && !cmd.Browser {
				return g.refusedNavigation(ctx, a, st, cmd, msg)
			}
			return relay.Verdict{Refuse: msg}
		}
	case firewall.CheckPolicy:
		u, err := urlParam(cmd.Params)
		if err != nil {
			return refusal(name, "unreadable params: "+err.Error())
		}
		if u != "" {
			if d := g.decideFor(st.User, u); !d.Allowed {
				return refusal(name, fmt.Sprintf("%s (%s): %s", d.Reason, truncateReason(u), rule.Why))
			}
		}
	case firewall.CheckRedirect:
		return g.checkRedirect(ctx, st, cmd, name, rule)
	case firewall.CheckPermissions:
		if why := firewall.LocalNetworkGrant(cmd.Params); why != "" {
			return refusal(name, why+": "+rule.Why)
		}
	case firewall.RewriteDownloads:
		return g.files.RewriteDownloads(st.User.Key, cmd)
	case firewall.CheckFiles:
		return g.files.CheckUpload(cmd)
	case firewall.CheckDropFiles:
		return g.files.CheckDrop(cmd)
	case firewall.CheckSizes:
		if why := firewall.SizeRefusal(cmd.Params, rule.Sizes); why != "" {
			return refusal(name, why+": "+rule.Why)
		}
	case firewall.GuardRead:
		return g.guardRead(ctx, st, cmd)
	case firewall.GuardPolicy:
		b, err := jsonv2.Marshal(g.policyViewFor(st.User.Key, g.scopes.OfUser(st.User)))
		if err != nil {
			return refusal(name, err.Error())
		}
		return relay.Verdict{Local: b}
	case firewall.GuardEnable, firewall.GuardDisable:
		st.GuardEvents.Store(rule.Action == firewall.GuardEnable)
		return relay.Verdict{Local: []byte("{}")}
	case firewall.Guard:
		return refusal(cmd.Method, rule.Why)
	case firewall.DialogsListen, firewall.DialogsUnlisten, firewall.DialogsAnswer, firewall.Detach:
		return g.dialogCommand(ctx, a, cmd, rule.Action)
	case firewall.CloseOwnTargets:
		g.closeOwnTargets(ctx, st)
		return relay.Verdict{Local: []byte("{}")}
	case firewall.Controls:
		if why := g.ctl.Refusal(rule.Controls, cmd.Params); why != "" {
			return refusal(name, why)
		}
	}
	return relay.Verdict{}
}

// checkURL returns a refusal message for a /json/new URL an agent may never
// open.
func (g *Guard) checkURL(u string) string { return urlRefusal("/json/new", u) }

// closeOwnTargets closes the user's targets: Browser.close from one agent
// must not take the browser down for other users.
func (g *Guard) closeOwnTargets(ctx context.Context, st *agentState) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, id := range g.users.Targets(st.User) {
		if _, err := g.mux.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": id}); err != nil {
			g.log.Debug("Browser.close: closing target failed", "target", id, "err", err)
		}
	}
}
