package cdpguard

import (
	"context"
	"fmt"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/dialogs"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// intercept applies the method firewall (internal/firewall) to one agent
// command. Refusals name the rule; the connection stays usable.
func (g *Guard) intercept(ctx context.Context, a *relay.Agent, st *agentState, cmd relay.Command) relay.Verdict {
	rule, name := firewall.Lookup(cmd.Method, cmd.Browser)
	if rule.Action == firewall.Refuse {
		return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s is refused: %s", name, rule.Why)}
	}
	iso, done := g.isolate(st, a, cmd)
	if done {
		return iso
	}
	if iso.Params != nil {
		cmd.Params = iso.Params
	}
	v := g.applyRule(ctx, a, st, cmd, rule)
	if v.Refuse == "" && v.Local == nil {
		if v.Params == nil {
			v.Params = iso.Params
		}
		if v.OnReply == nil {
			v.OnReply = iso.OnReply
		}
	}
	return v
}

func (g *Guard) applyRule(ctx context.Context, a *relay.Agent, st *agentState, cmd relay.Command, rule firewall.Rule) relay.Verdict {
	switch rule.Action {
	case firewall.Pass:
		return relay.Verdict{}
	case firewall.CheckURL:
		var p struct {
			URL string `json:"url"`
		}
		if err := unmarshalParams(cmd.Params, &p); err != nil {
			return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s: unreadable params: %v", cmd.Method, err)}
		}
		if msg := g.checkURL(p.URL); msg != "" {
			return relay.Verdict{Refuse: msg}
		}
		return relay.Verdict{}
	case firewall.CheckPolicy:
		var p struct {
			URL string `json:"url"`
		}
		if err := unmarshalParams(cmd.Params, &p); err != nil {
			return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s: unreadable params: %v", cmd.Method, err)}
		}
		if p.URL != "" {
			if d := g.policy.Decide(p.URL); !d.Allowed {
				return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s is refused: %s", cmd.Method, d.Reason)}
			}
		}
		return relay.Verdict{}
	case firewall.Guard:
		return g.guardMethod(st, cmd)
	case firewall.Rewrite:
		switch cmd.Method {
		case "Browser.close":
			g.closeOwnTargets(ctx, st)
			return relay.Verdict{Local: []byte("{}")}
		case "Page.handleJavaScriptDialog":
			return relay.Verdict{OnReply: dialogs.LateAnswer}
		}
	}
	return relay.Verdict{}
}

// checkURL returns a refusal message for URLs an agent may never open.
// Network URLs to hosts outside the allowlist are not refused here: the
// Fetch judge answers them with the explanation page, which tells the agent
// what it can reach.
func (g *Guard) checkURL(u string) string {
	if s := firewall.ForbiddenScheme(u); s != "" {
		return fmt.Sprintf("cdpguard: %q is refused: scheme %q is never allowed for agents", truncateReason(u), s)
	}
	return ""
}

func (g *Guard) guardMethod(st *agentState, cmd relay.Command) relay.Verdict {
	switch cmd.Method {
	case "Guard.getPolicy":
		b, err := jsonv2.Marshal(g.policy)
		if err != nil {
			return relay.Verdict{Refuse: "cdpguard: " + err.Error()}
		}
		return relay.Verdict{Local: b}
	case "Guard.enable":
		st.guardEvents.Store(true)
		return relay.Verdict{Local: []byte("{}")}
	case "Guard.disable":
		st.guardEvents.Store(false)
		return relay.Verdict{Local: []byte("{}")}
	}
	return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s is not a Guard method (Guard.getPolicy, Guard.enable, Guard.disable)", cmd.Method)}
}

// closeOwnTargets closes the user's targets: Browser.close from one agent
// must not take the browser down for other users.
func (g *Guard) closeOwnTargets(ctx context.Context, st *agentState) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, id := range g.users.Targets(st.user) {
		if _, err := g.mux.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": id}); err != nil {
			g.log.Debug("Browser.close: closing target failed", "target", id, "err", err)
		}
	}
}

// unmarshalParams decodes command params; absent params are an empty object.
func unmarshalParams(params []byte, v any) error {
	if len(params) == 0 {
		return nil
	}
	return jsonv2.Unmarshal(params, v)
}
