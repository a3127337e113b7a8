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
// are refused. The taint is the page's (page.tainted), ended with it.
type worldTaint struct {
	mu    sync.Mutex
	notes []*contextNote // oldest first
	lost  time.Time      // when notes were last dropped for room
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

// named reports whether an agent command naming id (on target, or on a
// session the guard cannot place) is in flight at now, or notes were
// dropped for room meanwhile: a controls context the guard sees created
// then is tainted (Controls.taintCreated).
func (w *worldTaint) named(target string, id int64, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.lost.IsZero() && now.Sub(w.lost) <= worldTaintWindow {
		return true
	}
	for _, n := range w.notes {
		if n.id == id && (n.target == "" || n.target == target) && n.inFlight(now) {
			return true
		}
	}
	return false
}

// taintCreated taints the new controls context id of target if an agent
// command naming it was in flight (worldTaint.named). Call it after the
// context is recorded as a guard world (Worlds.MadeIn): a command checked
// before that was noted before. The caller does not hold c.mu.
func (c *Controls) taintCreated(target string, id int64, now time.Time) {
	if c.taint.named(target, id, now) {
		c.markTainted(target, []int64{id})
	}
}

// markTainted taints ids of page target's controls contexts.
func (c *Controls) markTainted(target string, ids []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.rec(target); p != nil {
		p.taint(ids)
	}
}

// taintRefusal returns why a binding call from context id of page target
// is refused as tainted, or "".
func (c *Controls) taintRefusal(target string, id int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rec(target).taintRefusal(id)
}

// taint marks ids as tainted on p: a few at most (an agent naming a
// controls context), so a list. The caller holds Controls.mu.
func (p *page) taint(ids []int64) {
	for _, id := range ids {
		if !slices.Contains(p.tainted, id) {
			p.tainted = append(p.tainted, id)
		}
	}
}

// taintRefusal returns why a binding call from p's context id is refused,
// or "" (also for a nil p). The caller holds Controls.mu.
func (p *page) taintRefusal(id int64) string {
	if p == nil || !slices.Contains(p.tainted, id) {
		return ""
	}
	return fmt.Sprintf("an agent's command named this page's controls context (execution context %d), so agent code may run in it; reload the page for fresh controls", id)
}

// untaint forgets the taint of p's contexts that match (destroyed: the
// code in them went with them). The caller holds Controls.mu.
func (p *page) untaint(match func(int64) bool) {
	p.tainted = slices.DeleteFunc(p.tainted, match)
	if len(p.tainted) == 0 {
		p.tainted = nil
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
	live := func(p *page) {
		for _, id := range ids {
			if _, ok := p.worlds[id]; ok {
				p.taint(ids)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.rec(target); target != "" && p != nil {
		live(p)
	} else if target == "" {
		c.recs.Range(func(_ *pages.Page, p *page) bool {
			live(p)
			return true
		})
	}
}
