package cdpguard

import (
	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/events"
)

// eventBus declares which component observes which browser event on the
// guard's own sessions (the root session and the sessions its auto-attach
// made): the one place where events are routed. It is built before the
// browser connection exists and sealed before its read loop starts; the
// observers read the components through g when an event comes, so a
// component built after the bus (the judge, the dialog handler) is seen.
// Observers run on the read loop: anything that waits for a reply runs in a
// goroutine its component owns.
func (g *Guard) eventBus() (*events.Bus, error) {
	b := new(events.Bus)
	var err error
	on := func(who string, fn events.Observer, methods ...string) {
		if err == nil {
			err = b.On(who, fn, methods...)
		}
	}
	on("fetch judge", func(e *cdpmsg.Envelope) { g.judge.Paused(e.SessionID, e.Params) },
		"Fetch.requestPaused")
	on("dialogs", g.dialogEvent,
		"Page.javascriptDialogOpening", "Page.javascriptDialogClosed")
	on("grant frames", func(e *cdpmsg.Envelope) { g.grantScopes.frames.onEvent(e.SessionID, e.Method, e.Params) },
		"Page.frameAttached", "Page.frameDetached")
	on("worlds", g.worldsEvent,
		"Page.frameDetached", "Page.frameNavigated")
	on("controls", g.controlsEvent,
		"Page.frameNavigated",
		"Runtime.executionContextCreated", "Runtime.executionContextDestroyed", "Runtime.executionContextsCleared",
		"Runtime.bindingCalled")
	on("pages", g.onTargetEvent, // the targets and their users (session.go)
		"Target.attachedToTarget", "Target.targetCreated", "Target.targetInfoChanged",
		"Target.targetCrashed", "Target.targetDestroyed")
	if err != nil {
		return nil, err
	}
	b.Seal()
	return b, nil
}

// pageObservers are told when a page target gets the guard's session
// (its setup starts) and when it is gone, in this order.
func (g *Guard) pageAttached(targetID, sessionID string) {
	g.judge.AddPage(targetID)
	g.rd.pageAttached(targetID, sessionID)
	g.grantScopes.frames.pageSession(sessionID, targetID)
	g.dialogs.Attach(sessionID, targetID)
	if g.ctl != nil {
		g.ctl.setupPage(targetID, sessionID)
	}
}

// pageGone is pageAttached's end: the target was destroyed.
func (g *Guard) pageGone(targetID string) {
	g.judge.RemovePage(targetID)
	g.rd.pageGone(targetID)
	g.grantScopes.frames.pageGone(targetID)
	g.dialogs.Forget(targetID)
	if g.ctl != nil {
		g.ctl.pageGone(targetID)
	}
}

func (g *Guard) dialogEvent(e *cdpmsg.Envelope) {
	if e.Method == "Page.javascriptDialogOpening" {
		g.dialogs.Opening(e.SessionID, e.Params)
		return
	}
	g.dialogs.Closed(e.SessionID)
}

// worldsEvent forgets the guard's worlds of a frame that is gone, and of
// a frame's old document: their context ids may be the new page's own (a
// new renderer process numbers its contexts from 1 again).
func (g *Guard) worldsEvent(e *cdpmsg.Envelope) {
	if e.Method == "Page.frameDetached" {
		g.worlds.frameDetached(e.Params)
		return
	}
	if id, _, ok := navigatedFrame(e); ok {
		g.worlds.frameGone(id)
	}
}

func (g *Guard) controlsEvent(e *cdpmsg.Envelope) {
	if g.ctl == nil {
		return
	}
	if e.Method == "Page.frameNavigated" {
		if id, url, ok := navigatedFrame(e); ok {
			g.ctl.frameNavigated(e.SessionID, id, url)
		}
		return
	}
	g.ctl.onEvent(e)
}

// navigatedFrame reads a Page.frameNavigated event's frame.
func navigatedFrame(e *cdpmsg.Envelope) (id, url string, ok bool) {
	var p struct {
		Frame struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		} `json:"frame"`
	}
	if jsonv2.Unmarshal(e.Params, &p) != nil || p.Frame.ID == "" {
		return "", "", false
	}
	return p.Frame.ID, p.Frame.URL, true
}
