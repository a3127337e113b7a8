package controls

import (
	"slices"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	cdptarget "github.com/chromedp/cdproto/target"
)

// The controls' bookkeeping of their world's execution contexts, keyed by
// uniqueId (docs/decisions/2026-12-02-controls-contexts.md).

// contextCreated records a controls context: every one is a guard world
// agents must not name (Worlds.MadeIn), recorded under its frame and
// under the target (a subframe's context is named on the page's session);
// the main frame's is where the guard pushes and the only one whose
// binding calls count.
func (c *Controls) contextCreated(session, frameID string, id int64, uniq string) {
	target, ok := c.d.Pages.TargetOf(session)
	c.mu.Lock()
	p := c.rec(target)
	if !ok || p == nil {
		c.mu.Unlock()
		return
	}
	w := p.worlds[id]
	if w == nil {
		w = &world{}
		p.worlds[id] = w
	}
	w.frame = frameID
	if uniq != "" && !slices.Contains(w.uniqs, uniq) {
		w.uniqs = append(w.uniqs, uniq)
	}
	main := frameID == target
	if main {
		p.ctxID, p.ctxUniq = id, uniq
		p.failedPushes, p.notDrawn = 0, false
		if p.explain != nil && !p.explain.committed {
			p.explain.contextAfter = true
		}
		p.recover.changed()
		p.dirty = true
	}
	c.mu.Unlock()
	c.d.Worlds.MadeIn(cdptarget.ID(target), cdp.FrameID(frameID), runtime.ExecutionContextID(id))
	c.taintCreated(target, id, time.Now())
	if main {
		c.poke()
	}
}

// contextDestroyed forgets one controls context. With its uniqueId (every
// Chrome this guard supports sends one) only that context goes; a context
// id alone also matches a context of another process with the same id.
func (c *Controls) contextDestroyed(session string, id int64, uniq string) {
	if uniq == "" {
		c.contextGone(session, func(i int64, _ string) bool { return i == id })
		return
	}
	c.contextGone(session, func(_ int64, u string) bool { return u == uniq })
}

// contextGone forgets the controls contexts of a session that match (by id
// and uniqueId; a recovered context has no uniqueId). An id stays known
// (worlds, taint) while another live context still has it.
func (c *Controls) contextGone(session string, match func(int64, string) bool) {
	target, _ := c.d.Pages.TargetOf(session)
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.rec(target)
	if p == nil {
		return
	}
	gone := map[int64]bool{}
	for id, w := range p.worlds {
		n := len(w.uniqs)
		w.uniqs = slices.DeleteFunc(w.uniqs, func(u string) bool { return match(id, u) })
		if len(w.uniqs) < n || match(id, "") {
			gone[id] = true
		}
	}
	mainGone := p.ctxID != 0 && (gone[p.ctxID] && p.ctxUniq == "" || p.ctxUniq != "" && match(p.ctxID, p.ctxUniq))
	for id, w := range p.worlds {
		if len(w.uniqs) > 0 {
			delete(gone, id) // another process's context with the same id lives on
		}
	}
	if len(gone) > 0 {
		for id := range gone {
			if p.taintRefusal(id) != "" {
				p.recover.wasTainted(id) // a recovery may find the same world again
			}
		}
		p.untaint(func(id int64) bool { return gone[id] })
		for id := range gone {
			delete(p.worlds, id)
		}
	}
	if mainGone {
		p.ctxID, p.ctxUniq = 0, ""
		p.recover.changed()
		p.dirty = true
		c.poke()
	}
}
