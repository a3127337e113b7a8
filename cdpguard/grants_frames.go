package cdpguard

import (
	"sync"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// frameOwners ties subframes to the page that holds them, so the Fetch
// judge finds the user of a request made by a same-process iframe or by
// the first navigation of an out-of-process one (whose target does not
// exist yet): a paused request names only its frame. It learns from
// Page.frameAttached on the guard's own page sessions; frames nested in an
// out-of-process iframe are not seen (their requests get no grants: the
// policy alone decides, which fails closed).
type frameOwners struct {
	mu       sync.Mutex
	sessions map[string]string // guard's page session id → page target id
	frames   map[string]string // frame id → page target id
}

func newFrameOwners() *frameOwners {
	return &frameOwners{sessions: map[string]string{}, frames: map[string]string{}}
}

// pageSession records the guard's session on a page.
func (f *frameOwners) pageSession(sessionID, targetID string) {
	f.mu.Lock()
	f.sessions[sessionID] = targetID
	f.mu.Unlock()
}

// onEvent learns from Page.frameAttached and Page.frameDetached on the
// guard's page sessions; other events are ignored.
func (f *frameOwners) onEvent(sessionID, method string, params []byte) {
	var p struct {
		FrameID string `json:"frameId"`
		Reason  string `json:"reason"`
	}
	if sessionID == "" || jsonv2.Unmarshal(params, &p) != nil || p.FrameID == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	page, ok := f.sessions[sessionID]
	if !ok {
		return
	}
	switch method {
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

// pageOf returns the page that holds frameID, or "".
func (f *frameOwners) pageOf(frameID string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.frames[frameID]
}

// pageGone forgets a destroyed page's session and frames.
func (f *frameOwners) pageGone(targetID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s, t := range f.sessions {
		if t == targetID {
			delete(f.sessions, s)
		}
	}
	for fr, t := range f.frames {
		if t == targetID {
			delete(f.frames, fr)
		}
	}
}
