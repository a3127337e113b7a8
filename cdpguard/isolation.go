package cdpguard

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// browserContexts creates and disposes the contexts the guard gives users.
// Every one of them gets the egress proxy, when there is one.
type browserContexts struct{ g *Guard }

func (b browserContexts) Create(ctx context.Context, key string) (string, error) {
	res, err := b.g.mux.Call(ctx, "", "Target.createBrowserContext", b.g.contextParams(nil))
	if err != nil {
		return "", err
	}
	var r struct {
		BrowserContextID string `json:"browserContextId"`
	}
	if err := jsonv2.Unmarshal(res, &r); err != nil || r.BrowserContextID == "" {
		return "", fmt.Errorf("createBrowserContext: bad reply %s", res)
	}
	// No download may land in Chrome's default place before an agent sets a
	// behavior of its own: deny, or the user's own directory.
	p, err := b.g.downloadDefaults(key, r.BrowserContextID)
	if err == nil {
		_, err = b.g.mux.Call(ctx, "", "Browser.setDownloadBehavior", p)
	}
	if err != nil {
		_ = b.Dispose(ctx, r.BrowserContextID)
		return "", fmt.Errorf("set the download behavior of a new context: %w", err)
	}
	return r.BrowserContextID, nil
}

func (b browserContexts) Dispose(ctx context.Context, id string) error {
	_, err := b.g.mux.Call(ctx, "", "Target.disposeBrowserContext", map[string]any{"browserContextId": id})
	return err
}

// contextParams returns Target.createBrowserContext params with the guard's
// proxy settings; an agent's own proxy settings never get this far.
func (g *Guard) contextParams(in map[string]jsonv2.Value) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	if g.proxyURL != "" {
		out["proxyServer"] = g.proxyURL
		out["proxyBypassList"] = "<-loopback>"
	}
	return out
}

// contextScoped are browser-level methods that act on a whole browser
// context. Without a browserContextId they would act on Chrome's default
// context; the guard makes them act on the user's own.
var contextScoped = map[string]bool{
	"Browser.setDownloadBehavior": true,
	"Browser.grantPermissions":    true,
	"Browser.resetPermissions":    true,
	"Browser.setPermission":       true,
	"Browser.cancelDownload":      true,
	"Storage.getCookies":          true,
	"Storage.setCookies":          true,
	"Storage.clearCookies":        true,
	"Target.createTarget":         true,
}

// targetScoped are methods that name a target another user may own.
var targetScoped = map[string]bool{
	"Target.attachToTarget":      true,
	"Target.closeTarget":         true,
	"Target.activateTarget":      true,
	"Target.getTargetInfo":       true,
	"Target.detachFromTarget":    true,
	"Target.autoAttachRelated":   true,
	"Target.sendMessageToTarget": true,
	"Browser.getWindowForTarget": true,
}

// isolate applies per-user isolation to one command. ok is false when v is a
// refusal or a rewrite that must be used as is.
func (g *Guard) isolate(st *agentState, a *relay.Agent, cmd relay.Command) (v relay.Verdict, done bool) {
	u := st.user
	if targetScoped[cmd.Method] {
		var p struct {
			TargetID  string `json:"targetId"`
			SessionID string `json:"sessionId"`
		}
		if err := unmarshalParams(cmd.Params, &p); err != nil {
			return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s: unreadable params: %v", cmd.Method, err)}, true
		}
		if p.TargetID != "" && !g.users.OwnsTarget(u, p.TargetID) {
			return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s is refused: target %s is not in this user's browser context", cmd.Method, p.TargetID)}, true
		}
		if p.SessionID != "" && !a.Owns(p.SessionID) {
			return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s is refused: session %s is not this connection's", cmd.Method, p.SessionID)}, true
		}
		if cmd.Method == "Target.attachToTarget" {
			id := p.TargetID
			return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
				if len(errRaw) == 0 {
					st.setAttached(id, true)
				}
				return result, errRaw
			}}, false
		}
	}
	if !cmd.Browser && !anySession(cmd.Method) {
		return relay.Verdict{}, false
	}
	switch cmd.Method {
	case "Target.getTargets":
		return relay.Verdict{OnReply: g.filterTargets(u, st)}, true
	case "Target.getBrowserContexts":
		return relay.Verdict{OnReply: g.filterContexts(u)}, true
	case "Target.createBrowserContext":
		var in map[string]jsonv2.Value
		if len(cmd.Params) > 0 {
			if err := unmarshalParams(cmd.Params, &in); err != nil {
				return relay.Verdict{Refuse: "cdpguard: Target.createBrowserContext: unreadable params"}, true
			}
		}
		for _, k := range []string{"proxyServer", "proxyBypassList", "originsWithUniversalNetworkAccess"} {
			if _, ok := in[k]; ok {
				return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: Target.createBrowserContext is refused: %s is set by the guard (every context uses the guard's egress proxy)", k)}, true
			}
		}
		params, err := jsonv2.Marshal(g.contextParams(in))
		if err != nil {
			return relay.Verdict{Refuse: "cdpguard: " + err.Error()}, true
		}
		return relay.Verdict{Params: params, OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			var r struct {
				BrowserContextID string `json:"browserContextId"`
			}
			if len(errRaw) == 0 && jsonv2.Unmarshal(result, &r) == nil && r.BrowserContextID != "" {
				g.users.AddContext(u, r.BrowserContextID)
			}
			return result, errRaw
		}}, true
	case "Target.disposeBrowserContext":
		id := stringParam(cmd.Params, "browserContextId")
		if id == u.Primary {
			return relay.Verdict{Refuse: "cdpguard: Target.disposeBrowserContext is refused: the user's default context is disposed by the guard when the user is idle"}, true
		}
		if !g.users.OwnsContext(u, id) {
			return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: Target.disposeBrowserContext is refused: context %s is not this user's", id)}, true
		}
		return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			if len(errRaw) == 0 {
				g.users.RemoveContext(id)
			}
			return result, errRaw
		}}, true
	}
	if contextScoped[cmd.Method] {
		var in map[string]jsonv2.Value
		if len(cmd.Params) > 0 {
			if err := unmarshalParams(cmd.Params, &in); err != nil {
				return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s: unreadable params", cmd.Method)}, true
			}
		}
		if raw, ok := in["browserContextId"]; ok {
			var id string
			if jsonv2.Unmarshal(raw, &id) != nil || !g.users.OwnsContext(u, id) {
				return relay.Verdict{Refuse: fmt.Sprintf("cdpguard: %s is refused: browser context %s is not this user's", cmd.Method, raw)}, true
			}
			return relay.Verdict{}, false
		}
		out := maps.Clone(in)
		if out == nil {
			out = map[string]jsonv2.Value{}
		}
		idRaw, _ := jsonv2.Marshal(u.Primary)
		out["browserContextId"] = idRaw
		params, err := jsonv2.Marshal(out)
		if err != nil {
			return relay.Verdict{Refuse: "cdpguard: " + err.Error()}, true
		}
		return relay.Verdict{Params: params}, false
	}
	return relay.Verdict{}, false
}

func stringParam(params []byte, name string) string {
	var m map[string]jsonv2.Value
	if jsonv2.Unmarshal(params, &m) != nil {
		return ""
	}
	var s string
	_ = jsonv2.Unmarshal(m[name], &s)
	return s
}

// hideAttached sets targetInfo.attached to false: the guard's own
// attachment to every target must not show through, or clients that only
// attach to unattached targets (chromedp's popup handling) never do.
func hideAttached(params []byte) []byte {
	var p map[string]jsonv2.Value
	if jsonv2.Unmarshal(params, &p) != nil {
		return params
	}
	var ti map[string]jsonv2.Value
	if jsonv2.Unmarshal(p["targetInfo"], &ti) != nil {
		return params
	}
	ti["attached"] = jsonv2.Value("false")
	b, err := jsonv2.Marshal(ti)
	if err != nil {
		return params
	}
	p["targetInfo"] = b
	out, err := jsonv2.Marshal(p)
	if err != nil {
		return params
	}
	return out
}

// filterTargets keeps only the user's targets in a Target.getTargets reply.
func (g *Guard) filterTargets(u *users.User, st *agentState) func(result, errRaw []byte) ([]byte, []byte) {
	return func(result, errRaw []byte) ([]byte, []byte) {
		if len(errRaw) > 0 {
			return result, errRaw
		}
		var r struct {
			TargetInfos []map[string]jsonv2.Value `json:"targetInfos"`
		}
		if err := jsonv2.Unmarshal(result, &r); err != nil {
			return nil, []byte(`{"code":-32000,"message":"cdpguard: unreadable Target.getTargets reply"}`)
		}
		kept := []map[string]jsonv2.Value{}
		for _, t := range r.TargetInfos {
			var ctxID string
			_ = jsonv2.Unmarshal(t["browserContextId"], &ctxID)
			if ctxID != "" && g.users.OwnsContext(u, ctxID) {
				var id string
				_ = jsonv2.Unmarshal(t["targetId"], &id)
				if !st.isAttached(id) {
					t["attached"] = jsonv2.Value("false")
				}
				kept = append(kept, t)
			}
		}
		out, err := jsonv2.Marshal(map[string]any{"targetInfos": kept})
		if err != nil {
			return nil, []byte(`{"code":-32000,"message":"cdpguard: cannot filter targets"}`)
		}
		return out, nil
	}
}

// filterContexts shows a user only the contexts the user created; the
// user's primary context is the client's default context and stays unnamed.
func (g *Guard) filterContexts(u *users.User) func(result, errRaw []byte) ([]byte, []byte) {
	return func(result, errRaw []byte) ([]byte, []byte) {
		if len(errRaw) > 0 {
			return result, errRaw
		}
		var r struct {
			BrowserContextIDs []string `json:"browserContextIds"`
		}
		if err := jsonv2.Unmarshal(result, &r); err != nil {
			return nil, []byte(`{"code":-32000,"message":"cdpguard: unreadable Target.getBrowserContexts reply"}`)
		}
		kept := []string{}
		for _, id := range r.BrowserContextIDs {
			if id != u.Primary && g.users.OwnsContext(u, id) {
				kept = append(kept, id)
			}
		}
		out, _ := jsonv2.Marshal(map[string]any{"browserContextIds": kept})
		return out, nil
	}
}

// filterEvent keeps target events about other users' targets from an agent.
// An auto-attach to a foreign target is undone at once: the target is
// released (the agent's auto-attach would otherwise hold it forever) and the
// agent's session to it is detached.
func (g *Guard) filterEvent(u *users.User, st *agentState) func(a *relay.Agent, e *cdpmsg.Envelope) bool {
	return func(a *relay.Agent, e *cdpmsg.Envelope) bool {
		switch e.Method {
		case "Target.targetCreated", "Target.targetInfoChanged":
			var p struct {
				TargetInfo targetInfo `json:"targetInfo"`
			}
			if jsonv2.Unmarshal(e.Params, &p) != nil {
				return false
			}
			if p.TargetInfo.Type == "browser" {
				return g.isBrowserTarget(p.TargetInfo.TargetID) // puppeteer's browser.target(); see browsertarget.go
			}
			g.users.TrackTarget(p.TargetInfo.TargetID, p.TargetInfo.BrowserContextID)
			if !g.users.OwnsContext(u, p.TargetInfo.BrowserContextID) {
				return false
			}
			if p.TargetInfo.Attached && !st.isAttached(p.TargetInfo.TargetID) {
				e.Params = hideAttached(e.Params)
			}
			return true
		case "Target.targetDestroyed", "Target.targetCrashed":
			var p struct {
				TargetID string `json:"targetId"`
			}
			return jsonv2.Unmarshal(e.Params, &p) == nil && g.users.OwnsTarget(u, p.TargetID)
		case "Target.attachedToTarget":
			var p attachedToTarget
			if jsonv2.Unmarshal(e.Params, &p) != nil {
				return false
			}
			if p.TargetInfo.Type == "browser" {
				e.Params = g.sameBrowserTarget(e.Params) // the agent's own Target.attachToBrowserTarget
				return true
			}
			g.users.TrackTarget(p.TargetInfo.TargetID, p.TargetInfo.BrowserContextID)
			// An attachment announced on one of the agent's target sessions
			// (its own auto-attach to a page's OOPIFs and workers) is a child
			// of a target the agent already owns.
			if g.users.OwnsContext(u, p.TargetInfo.BrowserContextID) || !a.IsBrowserSession(e.SessionID) {
				st.setAttached(p.TargetInfo.TargetID, true)
				return true
			}
			if p.WaitingForDebugger {
				_ = g.mux.Send(p.SessionID, "Runtime.runIfWaitingForDebugger", nil)
			}
			_ = g.mux.Send(e.SessionID, "Target.detachFromTarget", map[string]any{"sessionId": p.SessionID})
			return false
		case "Target.detachedFromTarget", "Target.receivedMessageFromTarget":
			var p struct {
				SessionID string `json:"sessionId"`
				TargetID  string `json:"targetId"`
			}
			if jsonv2.Unmarshal(e.Params, &p) != nil || !a.Owns(p.SessionID) {
				return false
			}
			if e.Method == "Target.detachedFromTarget" {
				st.setAttached(p.TargetID, false)
			}
			return true
		}
		return true
	}
}

// anySession reports whether method gets browser-level isolation on every
// session: Chrome gives the page and tab sessions of a trusted client the
// browser's Target and Browser domains, so Target.getTargets there lists
// every user's tabs and Target.createTarget takes any browserContextId.
// Storage.* is left out: Chrome refuses browserContextId on those sessions.
func anySession(method string) bool {
	switch method {
	case "Target.getTargets", "Target.getBrowserContexts", "Target.createBrowserContext", "Target.disposeBrowserContext":
		return true
	}
	return contextScoped[method] && !strings.HasPrefix(method, "Storage.")
}
