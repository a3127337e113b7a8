package cdpguard

import (
	"context"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// blockedErrorText is what Chrome puts in Page.navigate's errorText for a
// navigation a client blocked (net::ERR_BLOCKED_BY_CLIENT, the same a
// Fetch.failRequest with BlockedByClient produces).
const blockedErrorText = "net::ERR_BLOCKED_BY_CLIENT"

// refusedNavigation answers a Page.navigate the firewall refuses the way
// Chrome answers a failed navigation: a normal reply with frameId and
// errorText, not a CDP error, so that clients that read errorText
// (chromedp's RunResponse, Puppeteer's and Playwright's goto) report it as
// they report any blocked navigation. The reason goes to the guard's log
// and to Guard.requestBlocked on the user's own connections.
func (g *Guard) refusedNavigation(ctx context.Context, a *relay.Agent, st *agentState, cmd relay.Command, reason string) relay.Verdict {
	var p struct {
		URL     string `json:"url"`
		FrameID string `json:"frameId"`
	}
	_ = unmarshalParams(cmd.Params, &p) // the caller has read url already
	frame := p.FrameID
	if frame == "" {
		// A page's main frame id is its target id.
		frame = g.sessionTarget(ctx, a, cmd.SessionID)
	}
	g.log.Warn("navigation refused", "url", truncateReason(p.URL), "reason", reason)
	g.notifyBlock(st.User.Key, fetchdomain.Block{URL: p.URL, Reason: reason, ResourceType: "Document", FrameID: frame, TopLevel: p.FrameID == ""})
	res, err := jsonv2.Marshal(struct {
		FrameID   string `json:"frameId"`
		ErrorText string `json:"errorText"`
	}{frame, blockedErrorText})
	if err != nil {
		return relay.Verdict{Refuse: reason}
	}
	return relay.Verdict{Local: res}
}
