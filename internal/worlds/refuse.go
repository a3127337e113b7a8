package worlds

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// Deps is what Command needs of the rest of the guard. Every field may be
// nil: Command then looks up no target (and refuses a command naming a
// guard world's id anywhere) and notes nothing.
type Deps struct {
	// Sessions places an agent's sessions. Only commands naming an id the
	// guard made in some frame pay for it.
	Sessions Sessions
	// Note is told the context ids an agent's command names before they
	// are checked, and returns what ends the note (nil for nothing): the
	// controls taint a context of theirs created while a command naming
	// its id is in flight (internal/controls/taint.go).
	Note func(a *relay.Agent, sessionID string, ids []int64) (done func())
	// Pass is called as Command lets through a command naming ids, with
	// the session's target when Command looked it up ("" when not) and
	// Note's done; its verdict is Command's.
	Pass func(a *relay.Agent, sessionID, target string, ids []int64, done func()) relay.Verdict
	// Pages is the page registry (internal/pages), on whose pages the
	// worlds' ids are kept; nil: a registry of the worlds' own, which knows
	// only the pages MadeIn names.
	Pages Pages
}

// Sessions places an agent's sessions (internal/targets.Record).
type Sessions interface {
	// SessionTarget returns the target of an agent's session, "" when it
	// cannot tell.
	SessionTarget(ctx context.Context, a *relay.Agent, sessionID string) string
}

// Pages is the page registry as the worlds use it: the page of a target,
// made for a page MadeIn names (Ensure), of a subframe (PageOf) and of the
// guard's session that reports a frame event (PageOfSession). Its
// lock is a leaf, taken under Worlds.mu.
type Pages interface {
	Page(targetID string) *pages.Page
	PageOfSession(sessionID string) *pages.Page
	Ensure(targetID string) *pages.Page
	PageOf(frameID string) string
}

// Command refuses an agent command that names one of the guard's isolated
// worlds by its execution context id (contextId or executionContextId:
// Runtime.evaluate, Runtime.callFunctionOn, DOM.resolveNode, ...) or by an
// object or call frame in it (V8 spells objectId and callFrameId
// "<isolate>.<context>.<n>": an agent pausing the reader's script in the
// debugger gets both). Hiding the worlds' executionContextCreated events
// is not enough: context ids are small integers an agent can guess (the
// red team reached the reader's world with contextId 4). Browser-level
// commands name no context and pass.
func (w *Worlds) Command(ctx context.Context, a *relay.Agent, cmd relay.Command) relay.Verdict {
	if cmd.Browser || !mentionsWorld(cmd.Params) {
		return relay.Verdict{}
	}
	ids, err := namedContexts(cmd.Params)
	if err != nil {
		return refusal(cmd.Method, "unreadable params: "+err.Error())
	}
	var done func()
	if w.deps.Note != nil {
		done = w.deps.Note(a, cmd.SessionID, ids) // before the check: see Deps.Note
	}
	if !w.anyMade(ids) {
		return w.pass(a, cmd.SessionID, "", ids, done)
	}
	target := ""
	if w.deps.Sessions != nil {
		target = w.deps.Sessions.SessionTarget(ctx, a, cmd.SessionID)
	}
	if target == "" || w.madeInTarget(target, ids) {
		if done != nil {
			done()
		}
		return refusal(cmd.Method, "the execution context is one of cdpguard's own isolated worlds; use the page's contexts (Runtime.executionContextCreated)")
	}
	return w.pass(a, cmd.SessionID, target, ids, done)
}

func (w *Worlds) pass(a *relay.Agent, session, target string, ids []int64, done func()) relay.Verdict {
	if w.deps.Pass == nil {
		return relay.Verdict{}
	}
	return w.deps.Pass(a, session, target, ids, done)
}

// NamedVerdict is the verdict Deps.Pass gives a command Command lets through:
// its reply ends the note of the ids it names.
func NamedVerdict(done func()) relay.Verdict {
	if done == nil {
		return relay.Verdict{}
	}
	return relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
		done()
		return result, errRaw
	}}
}

// WithNamed gives v, the verdict of the stages after Command, the
// reply hook of Command's verdict wv; a command those stages refuse or
// answer never reaches the browser, so its note ends now.
func WithNamed(wv, v relay.Verdict) relay.Verdict {
	if wv.OnReply == nil {
		return v
	}
	if v.Refuse != "" || v.Local != nil {
		wv.OnReply(nil, nil)
		return v
	}
	return relay.Combine(wv, v)
}

// namedContexts returns the execution context ids params name: contextId,
// executionContextId, and the context inside objectId and callFrameId. A
// key may be spelt with escapes ("cont\u0065xtId"): Chrome reads it as
// contextId, and so does the JSON decoder.
func namedContexts(params []byte) ([]int64, error) {
	var p struct {
		ContextID          jsonv2.Value `json:"contextId"`
		ExecutionContextID jsonv2.Value `json:"executionContextId"`
		ObjectID           string       `json:"objectId"`
		CallFrameID        string       `json:"callFrameId"`
	}
	if len(params) > 0 {
		if err := jsonv2.Unmarshal(params, &p); err != nil {
			return nil, err
		}
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
	return ids, nil
}

func refusal(method, why string) relay.Verdict {
	return relay.Verdict{Refuse: cdpmsg.Refusal(method, why)}
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
func (w *Worlds) anyMade(ids []int64) bool {
	if len(ids) == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	found := false
	w.each(func(_ *pages.Page, on *madeOn) bool {
		for _, m := range on.worlds {
			if slices.Contains(ids, m.id) {
				found = true
				return false
			}
		}
		return true
	})
	return found
}

// madeInTarget reports whether any of ids is a guard world's context in the
// page target (its main frame id is the target id).
func (w *Worlds) madeInTarget(target string, ids []int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := func(on *madeOn) bool {
		for _, m := range on.worlds {
			if (m.frame == target || m.onPage) && slices.Contains(ids, m.id) {
				return true
			}
		}
		return false
	}
	if on, ok := w.made.Get(w.deps.Pages.Page(target)); ok && in(on) {
		return true
	}
	for _, m := range w.loose.worlds {
		if m.frame == target && slices.Contains(ids, m.id) {
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
