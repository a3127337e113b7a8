package cdpguard

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// worldCommand refuses an agent command that names one of the guard's
// isolated worlds by its execution context id (contextId or
// executionContextId: Runtime.evaluate, Runtime.callFunctionOn,
// DOM.resolveNode, ...) or by an object or call frame in it (V8 spells
// objectId and callFrameId "<isolate>.<context>.<n>": an agent pausing the
// reader's script in the debugger gets both). Hiding the worlds'
// executionContextCreated events is not enough: context ids are small
// integers an agent can guess (the red team reached the reader's world
// with contextId 4). Only commands naming an id the guard made anywhere pay
// for looking up the session's target.
func (g *Guard) worldCommand(ctx context.Context, a *relay.Agent, cmd relay.Command) relay.Verdict {
	// A key may be spelt with escapes ("cont\u0065xtId"): Chrome reads it
	// as contextId, so params with a backslash are decoded too.
	if cmd.Browser || !mentionsWorld(cmd.Params) {
		return relay.Verdict{}
	}
	var p struct {
		ContextID          jsonv2.Value `json:"contextId"`
		ExecutionContextID jsonv2.Value `json:"executionContextId"`
		ObjectID           string       `json:"objectId"`
		CallFrameID        string       `json:"callFrameId"`
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
	for _, r := range []string{p.ObjectID, p.CallFrameID} {
		if n, ok := remoteContextID(r); ok {
			ids = append(ids, n)
		}
	}
	done := g.noteNamed(a, cmd.SessionID, ids) // before the check: see worldTaint
	if !g.worlds.anyMade(ids) {
		return g.passNamed(a, cmd.SessionID, "", ids, done)
	}
	target := g.sessionTarget(ctx, a, cmd.SessionID)
	if target == "" || g.worlds.madeInTarget(target, ids) {
		if done != nil {
			done()
		}
		return refusal(cmd.Method, "the execution context is one of cdpguard's own isolated worlds; use the page's contexts (Runtime.executionContextCreated)")
	}
	return g.passNamed(a, cmd.SessionID, target, ids, done)
}

// remoteContextID returns the context id inside a V8 objectId or
// callFrameId ("<isolate>.<context>.<n>"), cutting rather than splitting:
// Playwright names an objectId in most commands, so this is a hot path.
func remoteContextID(r string) (int64, bool) {
	_, rest, ok := strings.Cut(r, ".")
	mid, last, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(last, ".") {
		return 0, false
	}
	n, err := strconv.ParseInt(mid, 10, 64)
	return n, err == nil
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

// mentionsWorld reports whether params may name an execution context, an
// object or a call frame (or spell a key with an escape).
func mentionsWorld(params []byte) bool {
	for _, k := range []string{"ontextId", "bjectId", "allFrameId", "\\"} {
		if bytes.Contains(params, []byte(k)) {
			return true
		}
	}
	return false
}
