package scopes

import (
	"sync"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// frames ties subframes to the page that holds them, so the Fetch judge
// finds the user of a request made by a same-process iframe or by the
// first navigation of an out-of-process one (whose target does not exist
// yet): a paused request names only its frame. It learns from
// Page.frameAttached on the guard's own page sessions; frames nested in an
// out-of-process iframe are not seen (their requests get no grants: the
// policy alone decides, which fails closed).
type frames struct {
	mu       sync.Mutex
	sessions map[string]string // guard's page session id → page target id
	frames   map[string]string // frame id → page target id
}

func newFrames() *frames {
	return &frames{sessions: map[string]string{}, frames: map[string]string{}}
}

// PageAttached records the guard's own session on a page.
func (t *Table) PageAttached(sessionID, targetID string) {
	f := t.frames
	f.mu.Lock()
	f.sessions[sessionID] = targetID
	f.mu.Unlock()
}

// OnEvent learns from Page.frameAttached and Page.frameDetached on the
// guard's page sessions; other events are ignored.
func (t *Table) OnEvent(e *cdpmsg.Envelope) {
	if e.SessionID == "" || (e.Method != "Page.frameAttached" && e.Method != "Page.frameDetached") {
		return
	}
	var p struct {
		FrameID string `json:"frameId"`
		Reason  string `json:"reason"`
	}
	if jsonv2.Unmarshal(e.Params, &p) != nil || p.FrameID == "" {
		return
	}
	f := t.frames
	f.mu.Lock()
	defer f.mu.Unlock()
	page, ok := f.sessions[e.SessionID]
	if !ok {
		return
	}
	switch e.Method {
	case "Page.frameAttached":
		if p.FrameID != page {
			f.frames[p.FrameID] = page
		}
	case "Page.frameDetached":
		if p.Reason != "swap" { // a swap keeps the frame, in another process
			delete(f.frames, p.FrameID)
		}
	}
}

// PageOf returns the page that holds frameID, "" when the guard saw no
// such subframe attach.
func (t *Table) PageOf(frameID string) string { return t.frames.pageOf(frameID) }

func (f *frames) pageOf(frameID string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frames[frameID]
}

// PageGone forgets a destroyed page's session and frames.
func (t *Table) PageGone(targetID string) {
	f := t.frames
	f.mu.Lock()
	defer f.mu.Unlock()
	for s, id := range f.sessions {
		if id == targetID {
			delete(f.sessions, s)
		}
	}
	for fr, id := range f.frames {
		if id == targetID {
			delete(f.frames, fr)
		}
	}
}
