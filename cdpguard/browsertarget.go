package cdpguard

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// attachBrowserTarget turns Target.attachToTarget aimed at the browser's
// own target (type "browser": Puppeteer's browser.target().createCDPSession())
// into Target.attachToBrowserTarget, so the agent gets one more browser
// session of its own, under the browser-level rules, as Chrome would give it
// a browser session. Any other target goes through isolation as before.
// done is true when v is the whole verdict.
func (g *Guard) attachBrowserTarget(ctx context.Context, st *agentState, cmd relay.Command) (v relay.Verdict, done bool) {
	if cmd.Method != "Target.attachToTarget" {
		return relay.Verdict{}, false
	}
	var p struct {
		TargetID string `json:"targetId"`
	}
	if unmarshalParams(cmd.Params, &p) != nil || p.TargetID == "" || g.users.OwnsTarget(st.user, p.TargetID) {
		return relay.Verdict{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := g.mux.Call(ctx, "", "Target.getTargetInfo", map[string]string{"targetId": p.TargetID})
	if err != nil {
		return relay.Verdict{}, false
	}
	var r struct {
		TargetInfo targetInfo `json:"targetInfo"`
	}
	if jsonv2.Unmarshal(res, &r) != nil || r.TargetInfo.Type != "browser" || r.TargetInfo.TargetID != p.TargetID {
		return relay.Verdict{}, false
	}
	return relay.Verdict{Method: "Target.attachToBrowserTarget", Params: []byte("{}")}, true
}
