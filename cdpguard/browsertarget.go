package cdpguard

import (
	"context"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// learnBrowserTarget records the browser's own target id: the target of
// the guard's root session. Every Target.attachToBrowserTarget session
// (the guard's, each agent's) is listed by Target discovery as a browser
// target of its own; agents see only this one, as against Chrome.
func (g *Guard) learnBrowserTarget(ctx context.Context) {
	res, err := g.mux.Call(ctx, "", "Target.getTargetInfo", nil)
	if err != nil {
		g.log.Warn("cannot read the browser's target id; browser.target() will not work for agents", "err", err)
		return
	}
	var r struct {
		TargetInfo targetInfo `json:"targetInfo"`
	}
	if jsonv2.Unmarshal(res, &r) == nil && r.TargetInfo.Type == "browser" && r.TargetInfo.TargetID != "" {
		g.about.target.Store(&r.TargetInfo.TargetID)
	}
}

// isBrowserTarget reports whether id is the browser's own target.
func (g *Guard) isBrowserTarget(id string) bool {
	b := g.about.target.Load()
	return b != nil && *b == id
}

// attachBrowserTarget turns Target.attachToTarget aimed at the browser's
// own target (Puppeteer's browser.target().createCDPSession()) into
// Target.attachToBrowserTarget, so the agent gets one more browser session
// of its own, under the browser-level rules, as Chrome would give it a
// browser session. Any other target goes through isolation as before.
// done is true when v is the whole verdict.
func (g *Guard) attachBrowserTarget(cmd relay.Command, action firewall.Action) (v relay.Verdict, done bool) {
	if action != firewall.AttachTarget {
		return relay.Verdict{}, false
	}
	var p struct {
		TargetID string `json:"targetId"`
	}
	if unmarshalParams(cmd.Params, &p) != nil || !g.isBrowserTarget(p.TargetID) {
		return relay.Verdict{}, false
	}
	return relay.Verdict{Method: "Target.attachToBrowserTarget", Params: []byte("{}")}, true
}
