package controls

import (
	"context"
	"slices"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	cdptarget "github.com/chromedp/cdproto/target"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/js"
)

// recoverTries bounds how often the guard asks Chrome for the controls
// world of one explanation page.
const recoverTries = 3

// recovery is one page's state of asking Chrome for its lost main-frame
// controls context (docs/decisions/2026-12-02-controls-contexts.md): a
// committed explanation page with no controls context would show no Allow
// button, because some event (an executionContextsCleared, which names no
// context, from a process the page just left) took the context away.
type recovery struct {
	gen   uint64 // bumped whenever the main-frame context changes
	busy  bool   // a request is in flight
	tries int    // requests for this document
	// tainted lists the ids of tainted controls contexts forgotten in this
	// document (taint.go), a few at most: an event that names no context
	// (a late executionContextsCleared) may have forgotten a world that
	// still lives, and a recovery that finds it again must not make it
	// clean.
	tainted []int64
}

func (r *recovery) changed() { r.gen++ }

func (r *recovery) navigated() { r.gen++; r.tries = 0; r.tainted = nil }

func (r *recovery) wasTainted(id int64) {
	if !slices.Contains(r.tainted, id) {
		r.tainted = append(r.tainted, id)
	}
}

// recoveryAsk is one request for a page's controls world.
type recoveryAsk struct {
	target, session string
	gen             uint64
}

// needsRecovery returns the request to make for a page with no main-frame
// controls context, or nil: only a committed explanation page needs one
// (the button is what matters), one request at a time, a few per
// document. The caller holds c.mu.
func (c *Controls) needsRecovery(target string, p *page) *recoveryAsk {
	if p.ctxID != 0 || p.explain == nil || !p.explain.committed || p.recover.busy || p.recover.tries >= recoverTries {
		return nil
	}
	p.recover.busy = true
	p.recover.tries++
	return &recoveryAsk{target: target, session: p.session, gen: p.recover.gen}
}

// recoverWorld asks Chrome for the main frame's controls world:
// Page.createIsolatedWorld returns the world of that name if the document
// has one (its script ran) and makes it otherwise, so the controls script
// is evaluated in it too (it does nothing twice). The context is adopted
// only if no event changed the page's main-frame context meanwhile; it has
// no uniqueId, so pushes name it by id, and the page's next navigation
// drops it.
func (c *Controls) recoverWorld(ctx context.Context, r recoveryAsk) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var id int64
	res, err := c.d.Browser.Call(cctx, r.session, "Page.createIsolatedWorld", map[string]any{"frameId": r.target, "worldName": c.d.World})
	if err == nil {
		var w struct {
			ID int64 `json:"executionContextId"`
		}
		if err = cdpmsg.UnmarshalBrowser(res, &w); err == nil {
			id = w.ID
			c.d.Worlds.MadeIn(cdptarget.ID(r.target), cdp.FrameID(r.target), runtime.ExecutionContextID(id))
			_, err = c.d.Browser.Call(cctx, r.session, "Runtime.evaluate", map[string]any{"expression": js.Controls, "contextId": id})
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.rec(r.target)
	if p == nil {
		return
	}
	p.recover.busy = false
	if err != nil {
		c.d.Log.Debug("controls world recovery failed", "target", r.target, "err", err)
		p.dirty = true // tried again on a later round, up to recoverTries
		c.poke()
		return
	}
	if p.recover.gen != r.gen || p.ctxID != 0 {
		return // an event gave the page its context meanwhile
	}
	c.d.Log.Info("controls: the explanation page had no controls context; recovered it from Chrome", "target", r.target)
	p.ctxID, p.ctxUniq = id, ""
	if w := p.worlds[id]; w != nil {
		w.frame = r.target
	} else {
		p.worlds[id] = &world{frame: r.target}
	}
	if c.taint.named(r.target, id, time.Now()) || slices.Contains(p.recover.tainted, id) {
		p.taint([]int64{id})
	}
	p.dirty = true
	c.poke()
}
