package controls

import (
	"strings"
	"testing"
	"time"
)

// TestWorldTaint: a controls context named by an agent command still in
// flight when the guard sees it created (the race worldCommand alone
// loses), or named while it lives, refuses binding calls; a command whose
// reply came well before, another target's, or a refused one does not
// taint; a destroyed context forgets its taint; a flood of notes fails
// closed.
func TestWorldTaint(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var w worldTaint

	// In flight at creation, on the page's target or a session the guard
	// cannot place: tainted.
	w.note("T1", []int64{2}, t0)
	w.note("", []int64{3}, t0)
	for _, id := range []int64{2, 3} {
		if !w.named("T1", id, t0.Add(time.Second)) {
			t.Errorf("context %d named in flight: not tainted", id)
		}
	}

	// Replied long before the creation (a context of the same number in
	// the target's previous renderer), or another target's: clean.
	done := w.note("T2", []int64{4}, t0)
	done()
	now := time.Now().Add(worldTaintReplyGrace + time.Second)
	w.note("T3", []int64{5}, now)
	if w.named("T2", 4, now) || w.named("T2", 5, now) {
		t.Error("clean contexts tainted")
	}
	// A reply within the grace still counts (reply and creation come on
	// different sessions).
	done = w.note("T4", []int64{6}, time.Now())
	done()
	if !w.named("T4", 6, time.Now()) {
		t.Error("a command replied just before the creation did not taint")
	}
	// No reply ever: in flight for the window only.
	w.note("T5", []int64{7}, t0)
	if w.named("T5", 7, t0.Add(worldTaintWindow+time.Second)) {
		t.Error("a note older than the window tainted")
	}

	// A page's taint refuses its binding calls; a destroyed context
	// forgets its taint, the page's end all (TestPageEndForgetsState).
	p := &page{}
	p.taint([]int64{2, 3})
	if why := p.taintRefusal(2); !strings.Contains(why, "agent's command named this page's controls context") {
		t.Errorf("a tainted context: refusal %q", why)
	}
	p.untaint(func(id int64) bool { return id == 2 })
	if p.taintRefusal(2) != "" || p.taintRefusal(3) == "" {
		t.Error("untaint forgot the wrong taint")
	}
	p.untaint(func(int64) bool { return true })
	if p.taintRefusal(3) != "" {
		t.Error("untaint of all left a taint")
	}

	// A note whose reply never came does not hold up the others: replied
	// ones behind it are dropped once the bound is reached, without loss.
	var r worldTaint
	r.note("T7", []int64{1}, time.Now())
	old := time.Now().Add(-time.Minute)
	for range maxContextNotes {
		r.notes = append(r.notes, &contextNote{target: "T7", id: 2, at: old, done: old})
	}
	r.note("T7", []int64{3}, time.Now())
	if !r.lost.IsZero() || len(r.notes) != 2 {
		t.Errorf("replied notes behind an unreplied one: %d kept, lost %v", len(r.notes), r.lost)
	}

	// A flood past the bound drops notes and fails closed.
	var f worldTaint
	for i := range maxContextNotes + 10 {
		f.note("T9", []int64{int64(100 + i%50)}, t0)
	}
	if len(f.notes) > maxContextNotes {
		t.Errorf("%d notes kept, bound %d", len(f.notes), maxContextNotes)
	}
	if !f.named("T8", 1, t0.Add(time.Second)) {
		t.Error("after dropped notes a new controls context was not tainted")
	}
}

// TestNamed: a command the guard lets through that names a live controls
// context of its target taints that context; one naming an id the target
// has no controls context for, or a page the guard has not set up, taints
// nothing and does not fail.
func TestNamed(t *testing.T) {
	c := newTest(t)
	setup(c, "T1", "S1")
	setup(c, "T2", "S2")
	c.state("T1").worlds[7] = &world{frame: "T1"}
	a := &fakeAgent{} // no sessions it was told of: the target is unknown
	done := c.Note(a, "S", []int64{7})
	if done == nil {
		t.Error("no end for the note of a command naming ids")
	}
	c.Named(a, "S", "", []int64{7})
	if c.taintRefusal("T1", 7) == "" {
		t.Error("a live controls context named through the guard's check was not tainted")
	}
	c.Named(a, "S", "", []int64{8})
	c.Named(a, "S", "T2", []int64{7}) // another target's context 7
	c.Named(a, "S", "T9", []int64{7}) // a page the guard has not set up
	if c.taintRefusal("T1", 8) != "" || c.taintRefusal("T2", 7) != "" {
		t.Error("an id with no controls context was tainted")
	}
	// The agent knows the session's target: only that page's contexts count.
	c.state("T2").worlds[9] = &world{frame: "T2"}
	c.state("T1").worlds[9] = &world{frame: "T1"}
	c.Named(&fakeAgent{targets: map[string]string{"S2": "T2"}}, "S2", "", []int64{9})
	if c.taintRefusal("T2", 9) == "" || c.taintRefusal("T1", 9) != "" {
		t.Error("the agent's own target was not the one tainted")
	}
	if c.Note(a, "S", nil) != nil {
		t.Error("a note for a command naming no id")
	}
}
