package isolation

import (
	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
)

// Event reports whether connection c may see event e, and may rewrite its
// params. It keeps target events about other users' targets, and about
// targets that are not web content (firewall.NotWeb), from the agent. An
// auto-attach to such a target is undone (Options.Undo): the target is
// released (the agent's auto-attach would otherwise hold it forever) and
// the agent's session to it is detached. Event runs on the browser read
// loop: it only decides, writes nothing to the users registry (the
// guard's own event handler does) and never sends to the browser.
//
// Which events it looks at, and what it does with each, is the row of the
// agent event table (firewall.AgentEvent).
func (i *Isolator) Event(c *Conn, a Agent, e *cdpmsg.Envelope) bool {
	switch firewall.AgentEvent(e.Method) {
	case firewall.EvTargetInfo:
		var p struct {
			TargetInfo cdpmsg.TargetInfo `json:"targetInfo"`
		}
		if cdpmsg.UnmarshalBrowser(e.Params, &p) != nil {
			return false
		}
		t := p.TargetInfo
		if t.Type == "browser" {
			// Only the browser's own target (Puppeteer's browser.target()),
			// not the browser targets of other agents' sessions.
			return t.TargetID != "" && t.TargetID == i.o.Targets.BrowserTarget()
		}
		if !i.o.Users.OwnsContext(c.User, t.BrowserContextID) || firewall.NotWeb(t.Type, t.URL) != "" {
			return false
		}
		if t.Attached && !attached(a, t.TargetID) {
			e.Params = hideAttached(e.Params)
		}
		return true
	case firewall.EvTargetGone:
		var p struct {
			TargetID string `json:"targetId"`
		}
		return cdpmsg.UnmarshalBrowser(e.Params, &p) == nil && i.o.Users.OwnsTarget(c.User, p.TargetID) && i.o.Users.NotWeb(p.TargetID) == ""
	case firewall.EvTargetAttached:
		p := e.Attached
		if p == nil {
			return false
		}
		if p.TargetInfo.Type == "browser" {
			e.Params = i.sameBrowserTarget(e.Params) // the agent's own Target.attachToBrowserTarget
			return true
		}
		// An attachment announced on one of the agent's target sessions
		// (its own auto-attach to a page's OOPIFs and workers) is a child
		// of a target the agent already owns.
		mine := i.o.Users.OwnsContext(c.User, p.TargetInfo.BrowserContextID) || !a.IsBrowserSession(e.SessionID)
		if mine && firewall.NotWeb(p.TargetInfo.Type, p.TargetInfo.URL) == "" {
			return true // the relay then records the agent's session (Agent.SessionsOn)
		}
		i.o.Undo(e.SessionID, p.SessionID, p.WaitingForDebugger)
		return false
	case firewall.EvSessionDetached, firewall.EvSessionMessage:
		var p struct {
			SessionID string `json:"sessionId"`
			TargetID  string `json:"targetId"`
		}
		return cdpmsg.UnmarshalBrowser(e.Params, &p) == nil && a.Owns(p.SessionID)
	}
	return true
}

// sameBrowserTarget gives the browser-type targetInfo of a
// Target.attachedToTarget event the browser's own target id, once it is
// known. Chrome gives every Target.attachToBrowserTarget session a target
// id of its own, where attaching to the browser target keeps the browser's
// id: without this Puppeteer lists a second browser target.
func (i *Isolator) sameBrowserTarget(params []byte) []byte {
	id := i.o.Targets.BrowserTarget()
	if id == "" {
		return params
	}
	raw, err := jsonv2.Marshal(id)
	if err != nil {
		return params
	}
	return setTargetInfoField(params, "targetId", raw)
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
	if cdpmsg.UnmarshalBrowser(params, &p) != nil {
		return params
	}
	var ti map[string]jsonv2.Value
	if cdpmsg.UnmarshalBrowser(p["targetInfo"], &ti) != nil {
		return params
	}
	ti[key] = raw
	b, err := cdpmsg.MarshalBrowser(ti)
	if err != nil {
		return params
	}
	p["targetInfo"] = b
	out, err := cdpmsg.MarshalBrowser(p)
	if err != nil {
		return params
	}
	return out
}
