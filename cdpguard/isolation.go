package cdpguard

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// browserContexts creates and disposes the contexts the guard gives users.
// Every one of them gets the egress proxy, when there is one.
type browserContexts struct{ g *Guard }

func (b browserContexts) Create(ctx context.Context, key string) (string, error) {
	sc, err := b.g.newUserScope(key) // the user's own proxy listener (grants.go)
	if err != nil {
		return "", err
	}
	res, err := b.g.mux.Call(ctx, "", "Target.createBrowserContext", b.g.contextParams(nil, sc))
	if err != nil {
		sc.close()
		return "", err
	}
	var r struct {
		BrowserContextID string `json:"browserContextId"`
	}
	if err := jsonv2.Unmarshal(res, &r); err != nil || r.BrowserContextID == "" {
		sc.close()
		return "", fmt.Errorf("createBrowserContext: bad reply %s", res)
	}
	b.g.bindScope(r.BrowserContextID, sc)
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
	b.g.endScope(id) // a user's primary context: the session's grants end
	_, err := b.g.mux.Call(ctx, "", "Target.disposeBrowserContext", map[string]any{"browserContextId": id})
	return err
}

// contextParams returns Target.createBrowserContext params with the proxy
// settings of the user's session sc (its own listener, judged with its
// grants); an agent's own proxy settings never get this far.
func (g *Guard) contextParams(in map[string]jsonv2.Value, sc *grantScope) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	if g.proxyURL != "" {
		out["proxyServer"] = sc.proxyURL
		out["proxyBypassList"] = "<-loopback>"
	}
	return out
}

// isolate applies the method's isolation rule (internal/firewall scopes)
// to one command: ids it names must be the user's, replies are filtered to
// the user's, and context-wide methods act on the user's context.
func (g *Guard) isolate(ctx context.Context, st *agentState, a *relay.Agent, cmd relay.Command, scope firewall.Scope) relay.Verdict {
	u := st.user
	switch scope {
	case firewall.Targets:
		return g.isolateTarget(st, a, cmd)
	case firewall.Windows:
		return g.isolateWindow(ctx, u, cmd)
	case firewall.Listing:
		if cmd.Method == "Target.getTargets" {
			return relay.Verdict{OnReply: g.filterTargets(u, st)}
		}
		return relay.Verdict{OnReply: g.filterContexts(u)}
	case firewall.OwnContexts:
		return g.isolateOwnContext(u, cmd)
	case firewall.Contexts, firewall.BrowserContexts:
		return g.isolateContext(u, cmd)
	}
	return relay.Verdict{}
}

// isolateTarget refuses a command naming another user's target or another
// connection's session.
func (g *Guard) isolateTarget(st *agentState, a *relay.Agent, cmd relay.Command) relay.Verdict {
	var p struct {
		TargetID  string `json:"targetId"`
		SessionID string `json:"sessionId"`
	}
	if err := unmarshalParams(cmd.Params, &p); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	if p.TargetID != "" && !g.users.OwnsTarget(st.user, p.TargetID) {
		return refusal(cmd.Method, fmt.Sprintf("target %s is not in this user's browser context", p.TargetID))
	}
	if msg := g.notWebRefusal(cmd.Method, p.TargetID); msg != "" && cmd.Method != "Target.detachFromTarget" {
		return relay.Verdict{Refuse: msg}
	}
	if p.SessionID != "" && !a.Owns(p.SessionID) {
		return refusal(cmd.Method, fmt.Sprintf("session %s is not this connection's", p.SessionID))
	}
	id := p.TargetID
	switch cmd.Method {
	case "Target.attachToTarget":
		return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			if len(errRaw) == 0 {
				st.setAttached(id, true)
			}
			return result, errRaw
		}}
	case "Browser.getWindowForTarget":
		// Learn the user's window ids from the replies about its targets.
		return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			var r struct {
				WindowID int64 `json:"windowId"`
			}
			if id != "" && len(errRaw) == 0 && jsonv2.Unmarshal(result, &r) == nil {
				g.users.AddWindow(id, r.WindowID)
			}
			return result, errRaw
		}}
	}
	return relay.Verdict{}
}

// isolateWindow refuses a command naming a window that shows none of the
// user's targets. Window ids are learned from Browser.getWindowForTarget
// replies; an id not learned yet is looked up by asking Chrome for the
// windows of the user's targets.
func (g *Guard) isolateWindow(ctx context.Context, u *users.User, cmd relay.Command) relay.Verdict {
	var p struct {
		WindowID *int64 `json:"windowId"`
	}
	if err := unmarshalParams(cmd.Params, &p); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	if p.WindowID == nil {
		return refusal(cmd.Method, "windowId is required, and must be a window of this user's targets")
	}
	w := *p.WindowID
	if g.users.OwnsWindow(u, w) {
		return relay.Verdict{}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, t := range g.users.Targets(u) {
		res, err := g.mux.Call(ctx, "", "Browser.getWindowForTarget", map[string]any{"targetId": t})
		var r struct {
			WindowID int64 `json:"windowId"`
		}
		if err == nil && jsonv2.Unmarshal(res, &r) == nil {
			g.users.AddWindow(t, r.WindowID)
			if r.WindowID == w {
				return relay.Verdict{}
			}
		}
	}
	return refusal(cmd.Method, fmt.Sprintf("window %d is not a window of this user's targets", w))
}

// isolateOwnContext lets a user create contexts (with the guard's proxy
// settings) and dispose only contexts it created.
func (g *Guard) isolateOwnContext(u *users.User, cmd relay.Command) relay.Verdict {
	if cmd.Method == "Target.disposeBrowserContext" {
		id := stringParam(cmd.Params, "browserContextId")
		if id == u.Primary {
			return refusal(cmd.Method, "the user's default context is disposed by the guard when the user is idle")
		}
		if !g.users.OwnsContext(u, id) {
			return refusal(cmd.Method, fmt.Sprintf("context %s is not this user's", id))
		}
		return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
			if len(errRaw) == 0 {
				g.users.RemoveContext(id)
			}
			return result, errRaw
		}}
	}
	// Target.createBrowserContext: the firewall table has already refused
	// an agent's own proxy settings.
	var in map[string]jsonv2.Value
	if err := unmarshalParams(cmd.Params, &in); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	sc := g.scopeOfUser(u)
	if sc == nil || (g.proxyURL != "" && sc.proxyURL == "") {
		return refusal(cmd.Method, "this user's session has no egress proxy listener")
	}
	params, err := jsonv2.Marshal(g.contextParams(in, sc))
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Params: params, OnReply: func(result, errRaw []byte) ([]byte, []byte) {
		var r struct {
			BrowserContextID string `json:"browserContextId"`
		}
		if len(errRaw) == 0 && jsonv2.Unmarshal(result, &r) == nil && r.BrowserContextID != "" {
			g.users.AddContext(u, r.BrowserContextID)
		}
		return result, errRaw
	}}
}

// isolateContext makes a context-wide method act on the user's context:
// a browserContextId must be the user's, and a missing one becomes the
// user's primary context (Chrome's default context is nobody's).
func (g *Guard) isolateContext(u *users.User, cmd relay.Command) relay.Verdict {
	var in map[string]jsonv2.Value
	if err := unmarshalParams(cmd.Params, &in); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	if raw, ok := in["browserContextId"]; ok {
		var id string
		if jsonv2.Unmarshal(raw, &id) != nil || !g.users.OwnsContext(u, id) {
			return refusal(cmd.Method, fmt.Sprintf("browser context %s is not this user's", raw))
		}
		return relay.Verdict{}
	}
	out := maps.Clone(in)
	if out == nil {
		out = map[string]jsonv2.Value{}
	}
	idRaw, _ := jsonv2.Marshal(u.Primary)
	out["browserContextId"] = idRaw
	params, err := jsonv2.Marshal(out)
	if err != nil {
		return refusal(cmd.Method, err.Error())
	}
	return relay.Verdict{Params: params}
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
	return setTargetInfoField(params, "attached", jsonv2.Value("false"))
}

// setTargetInfoField returns a target event's params with targetInfo's
// field key set to the JSON value raw, every other field as it was; params
// it cannot read come back unchanged.
func setTargetInfoField(params []byte, key string, raw jsonv2.Value) []byte {
	var p map[string]jsonv2.Value
	if jsonv2.Unmarshal(params, &p) != nil {
		return params
	}
	var ti map[string]jsonv2.Value
	if jsonv2.Unmarshal(p["targetInfo"], &ti) != nil {
		return params
	}
	ti[key] = raw
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
			return nil, replyError("Target.getTargets", "unreadable reply")
		}
		kept := []map[string]jsonv2.Value{}
		for _, t := range r.TargetInfos {
			var ctxID string
			_ = jsonv2.Unmarshal(t["browserContextId"], &ctxID)
			var typ, url string
			_ = jsonv2.Unmarshal(t["type"], &typ)
			_ = jsonv2.Unmarshal(t["url"], &url)
			if ctxID != "" && g.users.OwnsContext(u, ctxID) && firewall.NotWeb(typ, url) == "" {
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
			return nil, replyError("Target.getTargets", "cannot filter targets")
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
			return nil, replyError("Target.getBrowserContexts", "unreadable reply")
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

// filterEvent keeps target events about other users' targets, and about
// targets that are not web content (firewall.NotWeb), from an agent. An
// auto-attach to such a target is undone: the target is released (the
// agent's auto-attach would otherwise hold it forever) and the agent's
// session to it is detached. The filter only decides; the registry is
// written by the guard's own event handler, and the sends to the browser
// run on the guard's effects goroutine.
func (g *Guard) filterEvent(u *users.User, st *agentState) func(a *relay.Agent, e *cdpmsg.Envelope) bool {
	return func(a *relay.Agent, e *cdpmsg.Envelope) bool {
		if g.worlds.hide(e) {
			return false
		}
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
			if !g.users.OwnsContext(u, p.TargetInfo.BrowserContextID) || firewall.NotWeb(p.TargetInfo.Type, p.TargetInfo.URL) != "" {
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
			return jsonv2.Unmarshal(e.Params, &p) == nil && g.users.OwnsTarget(u, p.TargetID) && g.users.NotWeb(p.TargetID) == ""
		case "Target.attachedToTarget":
			p := e.Attached
			if p == nil {
				return false
			}
			if p.TargetInfo.Type == "browser" {
				e.Params = g.sameBrowserTarget(e.Params) // the agent's own Target.attachToBrowserTarget
				return true
			}
			// An attachment announced on one of the agent's target sessions
			// (its own auto-attach to a page's OOPIFs and workers) is a child
			// of a target the agent already owns.
			mine := g.users.OwnsContext(u, p.TargetInfo.BrowserContextID) || !a.IsBrowserSession(e.SessionID)
			if mine && firewall.NotWeb(p.TargetInfo.Type, p.TargetInfo.URL) == "" {
				st.setAttached(p.TargetInfo.TargetID, true)
				return true
			}
			parent, child, waiting := e.SessionID, p.SessionID, p.WaitingForDebugger
			g.fx.add(func() {
				if waiting {
					_ = g.mux.Send(child, "Runtime.runIfWaitingForDebugger", nil)
				}
				_ = g.mux.Send(parent, "Target.detachFromTarget", map[string]any{"sessionId": child})
			})
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

// replyError is a CDP error object for a reply hook that cannot pass the
// browser's reply on.
func replyError(method, why string) []byte {
	return cdpmsg.AppendErrorObject(nil, cdpmsg.CodeServerError, cdpmsg.Refusal(method, why))
}
