package cdpguard

import (
	"bytes"
	"context"
	"math"
	"strconv"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// worldCommand refuses an agent command that names one of the guard's
// isolated worlds by its execution context id (contextId or
// executionContextId: Runtime.evaluate, Runtime.callFunctionOn,
// DOM.resolveNode, ...). Hiding the worlds' executionContextCreated events
// is not enough: context ids are small integers an agent can guess (the
// red team reached the reader's world with contextId 4). Only commands
// naming an id the guard made anywhere pay for looking up the session's
// target.
func (g *Guard) worldCommand(ctx context.Context, cmd relay.Command) relay.Verdict {
	// A key may be spelt with escapes ("cont\u0065xtId"): Chrome reads it
	// as contextId, so params with a backslash are decoded too.
	if cmd.Browser || !bytes.Contains(cmd.Params, []byte("ontextId")) && bytes.IndexByte(cmd.Params, '\\') < 0 {
		return relay.Verdict{}
	}
	var p struct {
		ContextID          jsonv2.Value `json:"contextId"`
		ExecutionContextID jsonv2.Value `json:"executionContextId"`
	}
	if err := unmarshalParams(cmd.Params, &p); err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	var ids []int64
	for _, v := range []jsonv2.Value{p.ContextID, p.ExecutionContextID} {
		// Chrome reads 4.0 and 4e0 as 4: compare numbers, not spellings.
		if f, err := strconv.ParseFloat(string(v), 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			ids = append(ids, int64(f))
		}
	}
	if !g.worlds.anyMade(ids) {
		return relay.Verdict{}
	}
	target := g.sessionTarget(ctx, cmd.SessionID)
	if target == "" || g.worlds.madeInTarget(target, ids) {
		return refusal(cmd.Method, "the execution context is one of cdpguard's own isolated worlds; use the page's contexts (Runtime.executionContextCreated)")
	}
	return relay.Verdict{}
}

// anyMade reports whether any of ids is a guard world's context in some
// frame (context ids are per renderer, so this only says a lookup is due).
func (w *guardWorlds) anyMade(ids []int64) bool {
	if len(ids) == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.made {
		for _, id := range ids {
			if m[id] {
				return true
			}
		}
	}
	return false
}

// madeInTarget reports whether any of ids is a guard world's context in the
// page target (its main frame id is the target id).
func (w *guardWorlds) madeInTarget(target string, ids []int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if w.made[target][id] {
			return true
		}
	}
	return false
}
