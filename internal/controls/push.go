package controls

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/js"
)

// push is one page's state on its way into its controls world.
type push struct {
	target  string
	session string
	ctxID   int64
	ctxUniq string
	state   state
}

// flush pushes the state of every changed page into its controls world on
// the guard's own session: the page never supplies any of it.
func (c *Controls) flush(ctx context.Context) {
	c.mu.Lock()
	var pushes []push
	var recoveries []recoveryAsk
	var repairs []repairAsk
	type changed struct {
		target string
		p      *page
	}
	var dirty []changed
	c.recs.Range(func(pg *pages.Page, p *page) bool {
		if p.dirty {
			p.dirty = false
			dirty = append(dirty, changed{string(pg.ID()), p})
		}
		return true
	})
	for _, d := range dirty {
		target, p := d.target, d.p
		if p.ctxID == 0 {
			if r := c.needsRecovery(target, p); r != nil {
				recoveries = append(recoveries, *r)
			}
			continue
		}
		if r := c.needsRepair(target, p); r != nil {
			repairs = append(repairs, *r)
			continue // pushed once repaired
		}
		st := state{Blocked: p.blocked, Recent: append([]block{}, p.recent...), Note: p.note, Binding: c.binding}
		if x := p.explain; x != nil && x.committed {
			st.Explain = &explainedView{Host: x.host, Granted: x.granted, Refused: x.refused}
			if err := c.d.Grants.Grantable(target, x.host); err != nil {
				st.Explain.NoGrant = strings.TrimPrefix(err.Error(), "grant: ")
			}
		}
		st.Origins = slices.Clone(c.d.Grants.Reachable(target))
		pushes = append(pushes, push{target: target, session: p.session, ctxID: p.ctxID, ctxUniq: p.ctxUniq, state: st})
	}
	c.mu.Unlock()
	for _, r := range recoveries {
		c.recoverWorld(ctx, r)
	}
	for _, r := range repairs {
		c.repairWorld(ctx, r)
	}
	for _, p := range pushes {
		params := map[string]any{
			"functionDeclaration": js.ControlsUpdate,
			"arguments":           []any{map[string]any{"value": p.state}},
			"returnByValue":       true,
		}
		// By uniqueId when known: an id alone may name another process's
		// context (the page's own) after a cross-process navigation.
		if p.ctxUniq != "" {
			params["uniqueContextId"] = p.ctxUniq
		} else {
			params["executionContextId"] = p.ctxID
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		res, err := c.d.Browser.Call(cctx, p.session, "Runtime.callFunctionOn", params)
		cancel()
		if err == nil {
			err = drawn(res)
		}
		c.pushed(p, err)
	}
}

// errNotDrawn is a push into a controls context where the controls script
// does not run (js/controls_update.js answered false): nothing was drawn.
var errNotDrawn = errors.New("the controls script is not running in its world")

// drawn reads a push's reply: only true says the world drew the state.
func drawn(res jsonv2.Value) error {
	var r struct {
		Result struct {
			Value bool `json:"value"`
		} `json:"result"`
	}
	if cdpmsg.UnmarshalBrowser(res, &r) != nil || !r.Result.Value {
		return errNotDrawn
	}
	return nil
}

// pushed records a push's outcome: a failed one is tried again on the next
// round while its context is still the page's, up to pushRetries.
func (c *Controls) pushed(p push, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pg := c.rec(p.target)
	if pg == nil || pg.ctxID != p.ctxID || pg.ctxUniq != p.ctxUniq {
		return
	}
	if err == nil {
		pg.failedPushes, pg.notDrawn = 0, false
		return
	}
	if errors.Is(err, errNotDrawn) {
		pg.notDrawn = true // repaired on the next round (repair.go)
	}
	pg.failedPushes++
	level := slog.LevelDebug
	if errors.Is(err, errNotDrawn) {
		// Never expected: the script runs as its world is made. Seen
		// when the page was released before Page.enable was in effect
		// (docs/decisions/2026-12-02-allow-button.md).
		level = slog.LevelInfo
	}
	c.d.Log.Log(context.Background(), level, "controls push failed", "target", p.target, "tries", pg.failedPushes, "err", err)
	if pg.failedPushes <= pushRetries {
		pg.dirty = true
		c.poke()
	}
}
