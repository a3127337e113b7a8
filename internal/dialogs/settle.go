package dialogs

import (
	"context"
	"time"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// settleWait bounds how long an agent's detach, Page.disable or hang-up
// waits for the open dialog of a page it listens on to close.
const settleWait = 3 * time.Second

// settleTick is how often settle looks at the page's dialog again.
const settleTick = 20 * time.Millisecond

// whyLeft is the guard's reason for answering a dialog because an agent
// listening on its page is leaving.
const whyLeft = "an agent listening on the page stopped listening (Page.disable, detach or its connection closed) while the dialog was open"

// SettleOwner is settle for every page owner (an agent connection that is
// going) listens on; the relay calls it before it detaches the agent's
// sessions, which Chrome would otherwise do with Page events enabled.
func (h *Handler) SettleOwner(ctx context.Context, owner any) {
	h.mu.Lock()
	var targets []string
	h.slot.Range(func(pg *pages.Page, p *page) bool {
		for _, l := range p.listeners {
			if l.owner == owner {
				targets = append(targets, string(pg.ID()))
			}
		}
		return true
	})
	h.mu.Unlock()
	for _, t := range targets {
		h.settle(ctx, t)
	}
}

// settleSession is settle for the page owner's session sessionID listens
// on, if it does.
func (h *Handler) settleSession(ctx context.Context, owner any, sessionID string) {
	h.mu.Lock()
	target, p := h.listening(listener{owner, sessionID})
	h.mu.Unlock()
	if p != nil {
		h.settle(ctx, target)
	}
}

// settle answers the open dialog of page target now and waits, bounded by
// ctx and settleWait, until Chrome closed it, answering any dialog that
// opens meanwhile. Why: in Chromium 156 a session with Page events enabled
// that detaches or sends Page.disable while the page's navigation is stuck
// behind an old document's dialog crashes the whole browser, every user's
// (docs/decisions/2026-12-02-beforeunload.md). The guard's answer is what
// finds that state (Chrome refuses it) and unsticks the page (unstick);
// once the dialog closed the agent's command may go on. A page with no
// dialog open costs nothing.
func (h *Handler) settle(ctx context.Context, target string) {
	ctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	tick := time.NewTicker(settleTick)
	defer tick.Stop()
	for {
		h.mu.Lock()
		p := h.rec(target)
		if h.closed || p == nil || p.cur == nil || p.cur.gone {
			h.mu.Unlock()
			return
		}
		d := p.cur
		now := d.state == open
		if now {
			if d.timer != nil {
				d.timer.Stop()
			}
			d.state = guardAnswered
			d.why = whyLeft
		}
		session := p.session
		h.mu.Unlock()
		if now {
			h.answer(session, d)
		}
		select {
		case <-ctx.Done():
			h.log.Warn("a page's dialog did not close before an agent stopped listening on it", "target", target, "type", d.typ)
			return
		case <-tick.C:
		}
	}
}
