package pages

import (
	"context"
	"testing"
	"time"
)

// TestDroppedStaysDropped: a target dropped after Keep that a setup's
// bookkeeping names again (Ensure, SetupDone, AwaitSetup: a late setup
// end, a feature's record) gets a record that ends with the next prune
// after Keep, instead of a live page no target event will ever end; within
// Keep of the destroy a late call still finds the destroyed page.
func TestDroppedStaysDropped(t *testing.T) {
	r, c := newTest()
	r.Track("T", "C")
	r.Attached("T", "S")
	r.Destroyed("T")
	kept := r.Page("T")
	if p := r.Ensure("T"); p != kept {
		t.Fatal("within Keep Ensure made a new page for a destroyed target")
	}
	c.t = c.t.Add(Keep + time.Second)
	r.Track("U", "C") // any target event prunes
	if r.Page("T") != nil {
		t.Fatal("kept past Keep")
	}

	ended := 0
	s := NewSlot(func(*Page, int) { ended++ })
	s.Set(r.Ensure("T"), 1) // a late record on the dropped target
	r.SetupDone("T")
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	_ = r.AwaitSetup(ctx, "T")
	if r.IsPage("T") {
		t.Error("a dropped target is a live page again")
	}
	c.t = c.t.Add(Keep + time.Second)
	r.Track("U", "C")
	if r.Page("T") != nil {
		t.Error("the late record's page is never dropped")
	}
	if ended != 1 {
		t.Errorf("the late record ended %d times, want once", ended)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.targets) != 1 { // U
		t.Errorf("targets kept: %d, want 1", len(r.targets))
	}
}

// TestUnheardThenHeard: a page made before any target event named it (a
// Target.createTarget reply read before the auto-attach's event) is kept
// once a target event names it, however long that took within Keep, and
// its records stay.
func TestUnheardThenHeard(t *testing.T) {
	r, c := newTest()
	s := NewSlot(func(*Page, int) { t.Error("a heard-of page's record ended") })
	s.Set(r.Ensure("T"), 1)
	c.t = c.t.Add(Keep / 2)
	r.Track("T", "C")
	r.Attached("T", "S")
	c.t = c.t.Add(Keep)
	r.Track("U", "C")
	if v, ok := s.Get(r.Page("T")); !ok || v != 1 {
		t.Fatalf("record = %d, %v after the target was heard of", v, ok)
	}
	if r.PageOfSession("S") == nil {
		t.Error("the page lost its session")
	}
}
