package controls

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// worldTaintWindow bounds how long an agent command naming a context id
// counts as in flight when its reply never comes (the agent left, the
// browser was lost): a command may be held on its way (a navigation
// suspends a target's protocol messages until the new document commits,
// a busy page queues them) and run in a context created meanwhile.
const worldTaintWindow = 30 * time.Second

// worldTaintReplyGrace is how long after its reply a command still counts
// as in flight: Chrome sends the reply and the guard's
// executionContextCreated on different sessions, so the guard may read the
// reply of a command that ran in a new context before that context's
// creation.
const worldTaintReplyGrace = time.Second

// maxContextNotes bounds the notes kept; when an agent floods, the oldest
// are dropped and every context created since the drop counts as tainted
// (fail closed: the flood only costs the human the Allow button).
const maxContextNotes = 4096

// worldTaint keeps agents out of the controls world's binding despite a
// race the guard's check of named contexts alone loses: context ids are small integers, so an
// agent can name the controls world's id before the guard has read the
// world's Runtime.executionContextCreated; Chrome then runs the agent's
// code in the new world, where it finds the binding and reports a forged
// "trusted" click (seen with Chromium 156: an agent spamming
// Runtime.evaluate{contextId: 1..6} while navigating to a blocked URL got
// a grant on the first try). Every id an agent command names is noted,
// with the target of the command's session, before the guard checks it (Note),
// and stays in flight until the command's reply; a controls context named
// by a command in flight when the guard sees it created, or by a command
// the guard let through while it lives (Named), is tainted: its binding calls
// are refused.
type worldTaint struct {
	mu      sync.Mutex
	notes   []*contextNote            // oldest first
	lost    time.Time                 // when notes were last dropped for room
	tainted map[string]map[int64]bool // target → tainted controls contexts
}

// contextNote is one execution context id an agent command named.
type contextNote struct {
	target string // "" when the guard cannot tell (a page connection's own session)
	id     int64
	at     time.Time // when the command was checked
	done   time.Time // when its reply came; zero while in flight
}

// inFlight reports whether the command of n may still run, or just ran,
// in a context the guard sees created at now.
func (n *contextNote) inFlight(now time.Time) bool {
	if n.done.IsZero() {
		return now.Sub(n.at) <= worldTaintWindow
	}
	return now.Sub(n.done) <= worldTaintReplyGrace
}

// note records ids named on target at now, dropping notes no longer in
// flight from the front and, past the bound, the oldest; done ends them.
func (w *worldTaint) note(target string, ids []int64, now time.Time) (done func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := 0
	for i < len(w.notes) && !w.notes[i].inFlight(now) {
		i++
	}
	w.notes = append(w.notes[:0], w.notes[i:]...)
	if len(w.notes)+len(ids) > maxContextNotes {
		// A note left in flight (its reply never came) holds up the front:
		// keep only the notes still in flight, once per bound's worth.
		w.notes = slices.DeleteFunc(w.notes, func(n *contextNote) bool { return !n.inFlight(now) })
	}
	if extra := len(w.notes) + len(ids) - maxContextNotes; extra > 0 {
		w.notes = w.notes[min(extra, len(w.notes)):]
		w.lost = now
	}
	added := make([]*contextNote, len(ids))
	for k, id := range ids {
		added[k] = &contextNote{target: target, id: id, at: now}
	}
	w.notes = append(w.notes, added...)
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, n := range added {
			if n.done.IsZero() {
				n.done = time.Now()
			}
		}
	}
}

// created taints the controls context id of target if an agent command
// naming it (on target, or on a session the guard cannot place) is in
// flight at now. Call it after the context is recorded as a guard world
// (Worlds.MadeIn): a command checked before that was noted before.
func (w *worldTaint) created(target string, id int64, now time.Time) {
	w.mu.Lock()
	named := !w.lost.IsZero() && now.Sub(w.lost) <= worldTaintWindow
	for _, n := range w.notes {
		if n.id == id && (n.target == "" || n.target == target) && n.inFlight(now) {
			named = true
		}
	}
	w.mu.Unlock()
	if named {
		w.mark(target, []int64{id})
	}
}

// mark taints ids of target.
func (w *worldTaint) mark(target string, ids []int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tainted == nil {
		w.tainted = map[string]map[int64]bool{}
	}
	if w.tainted[target] == nil {
		w.tainted[target] = map[int64]bool{}
	}
	for _, id := range ids {
		w.tainted[target][id] = true
	}
}

// refusal returns why a binding call from context id of target is
// refused, or "".
func (w *worldTaint) refusal(target string, id int64) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.tainted[target][id] {
		return ""
	}
	return fmt.Sprintf("an agent's command named this page's controls context (execution context %d), so agent code may run in it; reload the page for fresh controls", id)
}

// gone forgets the taint of target's contexts that match (destroyed: the
// code in them went with them).
func (w *worldTaint) gone(target string, match func(int64) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id := range w.tainted[target] {
		if match(id) {
			delete(w.tainted[target], id)
		}
	}
	if len(w.tainted[target]) == 0 {
		delete(w.tainted, target)
	}
}

// Note records the execution context ids a command of agent a on session
// names, with the session's target ("" when a cannot tell: a page
// connection's own session), before the guard checks them against its
// worlds. It returns what ends the note (the command's reply, or its
// refusal); nil when off or no id is named.
func (c *Controls) Note(a Agent, session string, ids []int64) (done func()) {
	if c == nil || len(ids) == 0 {
		return nil
	}
	target, _ := a.TargetOf(session)
	return c.taint.note(target, ids, time.Now())
}

// Named is called as the guard lets a command of agent a on session
// naming ids through: a live controls context among them (one the guard's
// worlds had forgotten for a moment, as on a frame's navigation) is
// tainted at once. target is the session's target when the guard looked
// it up, "" when not; when neither the guard nor a knows it, every page's
// contexts count.
func (c *Controls) Named(a Agent, session, target string, ids []int64) {
	if c == nil || len(ids) == 0 {
		return
	}
	if target == "" {
		target, _ = a.TargetOf(session)
	}
	var hit []string
	live := func(t string, p *page) {
		for _, id := range ids {
			if _, ok := p.worlds[id]; ok {
				hit = append(hit, t)
			}
		}
	}
	c.mu.Lock()
	if p := c.rec(target); target != "" && p != nil {
		live(target, p)
	} else if target == "" {
		c.recs.Range(func(pg *pages.Page, p *page) bool {
			live(string(pg.ID()), p)
			return true
		})
	}
	c.mu.Unlock()
	for _, t := range hit {
		c.taint.mark(t, ids)
	}
}
