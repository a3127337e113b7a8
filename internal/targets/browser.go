package targets

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// LearnBrowser records the browser's own target id: the target of the
// guard's root session. Every Target.attachToBrowserTarget session (the
// guard's, each agent's) is listed by Target discovery as a browser target
// of its own; agents see only this one, as against Chrome.
func (r *Record) LearnBrowser(ctx context.Context) {
	res, err := r.d.Browser.Call(ctx, "", "Target.getTargetInfo", nil)
	if err != nil {
		r.d.Log.Warn("cannot read the browser's target id; browser.target() will not work for agents", "err", err)
		return
	}
	var p struct {
		TargetInfo cdpmsg.TargetInfo `json:"targetInfo"`
	}
	if cdpmsg.UnmarshalBrowser(res, &p) == nil && p.TargetInfo.Type == "browser" && p.TargetInfo.TargetID != "" {
		r.browser.Store(&p.TargetInfo.TargetID)
	}
}

// BrowserTarget returns the browser's own target id, "" before it is known.
func (r *Record) BrowserTarget() string {
	if b := r.browser.Load(); b != nil {
		return *b
	}
	return ""
}

// AttachBrowser turns Target.attachToTarget aimed at the browser's own
// target (Puppeteer's browser.target().createCDPSession()) into
// Target.attachToBrowserTarget, so the agent gets one more browser session
// of its own, under the browser-level rules, as Chrome would give it a
// browser session. Any other target goes through isolation as before.
// The command pipeline calls it for the firewall's AttachTarget row only.
// done is true when v is the whole verdict.
func (r *Record) AttachBrowser(cmd relay.Command) (v relay.Verdict, done bool) {
	var p struct {
		TargetID string `json:"targetId"`
	}
	if len(cmd.Params) == 0 || jsonv2.Unmarshal(cmd.Params, &p) != nil || p.TargetID == "" || p.TargetID != r.BrowserTarget() {
		return relay.Verdict{}, false
	}
	return relay.Verdict{Method: "Target.attachToBrowserTarget", Params: []byte("{}")}, true
}

// SessionTarget returns the target of an agent's session, or "". The relay
// records it from the Target.attachedToTarget that gave the agent the
// session, so commands that need it cost no browser round trip; only a
// session the agent was not told of that way (the page session of a
// /devtools/page/ connection) is asked of Chrome (Target.getTargetInfo
// without a targetId describes the session's own target).
func (r *Record) SessionTarget(ctx context.Context, a *relay.Agent, sessionID string) string {
	if t, ok := a.TargetOf(sessionID); ok {
		return t
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := r.d.Browser.Call(ctx, sessionID, "Target.getTargetInfo", nil)
	if err != nil {
		r.d.Log.Debug("cannot tell the target of an agent session; its dialogs get no grace", "session", sessionID, "err", err)
		return ""
	}
	var p struct {
		TargetInfo cdpmsg.TargetInfo `json:"targetInfo"`
	}
	if err := cdpmsg.UnmarshalBrowser(res, &p); err != nil {
		return ""
	}
	return p.TargetInfo.TargetID
}
