package cdpmsg

import "github.com/chromedp/cdproto/cdp/jsonv2"

// TargetInfo is the part of Target.TargetInfo cdpguard reads.
type TargetInfo struct {
	TargetID         string `json:"targetId"`
	Type             string `json:"type"`
	Title            string `json:"title"`
	URL              string `json:"url"`
	Attached         bool   `json:"attached"`
	OpenerID         string `json:"openerId,omitempty"`
	BrowserContextID string `json:"browserContextId,omitempty"`
}

// Attached is the params of Target.attachedToTarget.
type Attached struct {
	SessionID          string     `json:"sessionId"`
	TargetInfo         TargetInfo `json:"targetInfo"`
	WaitingForDebugger bool       `json:"waitingForDebugger"`
}

// Detached is the params of Target.detachedFromTarget.
type Detached struct {
	SessionID string `json:"sessionId"`
	TargetID  string `json:"targetId,omitempty"`
}

// DecodeSessions decodes the params of the two events that make and end
// sessions, Target.attachedToTarget into e.Attached and
// Target.detachedFromTarget into e.Detached, once, where the event enters
// (the mux read loop): the mux, the agent and the guard read one decoding
// and keep their session books by the field, not by the event's name. The
// params of every other message stay undecoded (the relay forwards them
// as they are). Unreadable params, or no session id, leave both nil.
func (e *Envelope) DecodeSessions() {
	e.Attached, e.Detached = nil, nil
	if e.HasID {
		return
	}
	switch e.Method {
	case "Target.attachedToTarget":
		var a Attached
		if jsonv2.Unmarshal(e.Params, &a, browserJSON) == nil && a.SessionID != "" {
			e.Attached = &a
		}
	case "Target.detachedFromTarget":
		var d Detached
		if jsonv2.Unmarshal(e.Params, &d, browserJSON) == nil && d.SessionID != "" {
			e.Detached = &d
		}
	}
}
