package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/events"
)

// eventBus declares which component observes which browser event on the
// guard's own sessions (the root session and the sessions its auto-attach
// made): the one place where events are routed. It is built before the
// browser connection exists and sealed before its read loop starts; the
// observers read the components through g when an event comes, so a
// component built after the bus (the judge) is seen.
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
	on("dialogs", func(e *cdpmsg.Envelope) { g.dialogs.Opening(e.SessionID, e.Params) }, "Page.javascriptDialogOpening")
	on("dialogs", func(e *cdpmsg.Envelope) { g.dialogs.Closed(e.SessionID) }, "Page.javascriptDialogClosed")
	on("dialogs", func(e *cdpmsg.Envelope) { g.dialogs.Navigating(e.SessionID, e.Params) }, "Page.frameStartedNavigating")
	on("dialogs", func(e *cdpmsg.Envelope) { g.dialogs.Navigated(e.SessionID, e.Params) }, "Page.frameNavigated")
	// The page registry first: the subframes of the guard's pages
	// (internal/pages; the targets are internal/targets' record below).
	on("pages", g.pages.OnFrameAttached, "Page.frameAttached")
	on("pages", g.pages.OnFrameDetached, "Page.frameDetached")
	// The worlds forget a frame's old document before the controls record
	// their live worlds again.
	on("worlds", func(e *cdpmsg.Envelope) { g.worlds.OnFrameDetached(e) }, "Page.frameDetached")
	on("worlds", func(e *cdpmsg.Envelope) { g.worlds.OnFrameNavigated(e) }, "Page.frameNavigated")
	// The controls are nil when off: their methods do nothing.
	on("controls", func(e *cdpmsg.Envelope) { g.ctl.OnFrameNavigated(e) }, "Page.frameNavigated")
	on("controls", func(e *cdpmsg.Envelope) { g.ctl.OnContextCreated(e) }, "Runtime.executionContextCreated")
	on("controls", func(e *cdpmsg.Envelope) { g.ctl.OnContextDestroyed(e) }, "Runtime.executionContextDestroyed")
	on("controls", func(e *cdpmsg.Envelope) { g.ctl.OnContextsCleared(e) }, "Runtime.executionContextsCleared")
	on("controls", func(e *cdpmsg.Envelope) { g.ctl.OnBindingCalled(e) }, "Runtime.bindingCalled")
	// The targets, their users and their pages (internal/targets).
	on("targets", g.targets.Attached, "Target.attachedToTarget")
	on("targets", func(e *cdpmsg.Envelope) { g.targets.Changed(e, true) }, "Target.targetCreated")
	on("targets", func(e *cdpmsg.Envelope) { g.targets.Changed(e, false) }, "Target.targetInfoChanged")
	on("targets", g.targets.Crashed, "Target.targetCrashed")
	on("targets", g.targets.Destroyed, "Target.targetDestroyed")
	if err != nil {
		return nil, err
	}
	b.Seal()
	return b, nil
}
