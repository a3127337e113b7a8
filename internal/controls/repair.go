package controls

import (
	"context"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/js"
)

// repairAsk is one request to repair a page's main-frame controls world
// whose push drew nothing (errNotDrawn): Chrome made the world in the new
// document but ran no script in it, and reported no Page.frameNavigated for
// that document (docs/decisions/2026-12-02-allow-button.md).
type repairAsk struct {
	target, session string
	ctxID           int64
	ctxUniq         string
}

// ctxKey names one execution context.
type ctxKey struct {
	id   int64
	uniq string
}

// needsRepair returns the repair to make for a page whose last push into
// its current main-frame context drew nothing, or nil: once per context.
// The caller holds c.mu.
func (c *Controls) needsRepair(target string, p *page) *repairAsk {
	k := ctxKey{p.ctxID, p.ctxUniq}
	if !p.notDrawn || p.ctxID == 0 || p.repaired == k {
		return nil
	}
	p.repaired = k
	return &repairAsk{target: target, session: p.session, ctxID: p.ctxID, ctxUniq: p.ctxUniq}
}

// repairWorld evaluates the controls script in the page's controls world
// (the guard's own script in the guard's own world, as
// Page.addScriptToEvaluateOnNewDocument would have; it does nothing if it
// ran already) and asks Chrome for the main frame's document
// (Page.getFrameTree, on the guard's session): a frameNavigated that never
// came is what commits an explanation page. The document counts as the
// explanation page only if its URL is the explained one and a main-frame
// controls context was created after the block was answered.
func (c *Controls) repairWorld(ctx context.Context, r repairAsk) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	params := map[string]any{"expression": js.Controls}
	if r.ctxUniq != "" {
		params["uniqueContextId"] = r.ctxUniq
	} else {
		params["contextId"] = r.ctxID
	}
	_, err := c.d.Browser.Call(cctx, r.session, "Runtime.evaluate", params)
	var tree struct {
		FrameTree struct {
			Frame struct {
				ID  string `json:"id"`
				URL string `json:"url"`
			} `json:"frame"`
		} `json:"frameTree"`
	}
	if err == nil {
		var res jsonv2.Value
		if res, err = c.d.Browser.Call(cctx, r.session, "Page.getFrameTree", nil); err == nil {
			err = cdpmsg.UnmarshalBrowser(res, &tree)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.rec(r.target)
	if p == nil || p.ctxID != r.ctxID || p.ctxUniq != r.ctxUniq {
		return // the page moved on: its new context is pushed anew
	}
	if err != nil {
		c.d.Log.Info("controls: repairing the controls world failed", "target", r.target, "err", err)
		return
	}
	f := tree.FrameTree.Frame
	x := p.explain
	if x != nil && !x.committed && x.contextAfter && f.ID == r.target && f.URL == x.url {
		c.d.Log.Info("controls: the explanation page committed without Page.frameNavigated; taken from Page.getFrameTree", "target", r.target)
		p.commit()
	}
	p.failedPushes = 0
	p.dirty = true
	c.poke()
}
