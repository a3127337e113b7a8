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

// DecodeAttached decodes the params of a Target.attachedToTarget event into
// e.Attached, once, where the event enters (the mux read loop), so that the
// mux, the agent and the guard read one decoding. Unreadable params leave
// e.Attached nil.
func (e *Envelope) DecodeAttached() {
	e.Attached = nil
	if e.Method != "Target.attachedToTarget" || e.HasID {
		return
	}
	var a Attached
	if jsonv2.Unmarshal(e.Params, &a) == nil && a.SessionID != "" {
		e.Attached = &a
	}
}
