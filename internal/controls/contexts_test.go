package controls

import (
	"slices"
	"testing"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/pages"
)

// TestControlsContextsByUniqueID: across a process swap the new document's
// controls context can have the same small id as the old one; the old
// process's late executionContextDestroyed names that id. Keyed by
// uniqueId, it forgets only the old context, and the page keeps the one it
// pushes its button into.
func TestControlsContextsByUniqueID(t *testing.T) {
	c := newTest(t)
	c.contextCreated("S", "T", 4, "old.1")
	c.contextCreated("S", "T", 4, "new.2") // the new process numbers from 1 too
	c.contextDestroyed("S", 4, "old.1")    // late, from the old process
	p := c.state("T")
	if p.ctxID != 4 || p.ctxUniq != "new.2" || p.worlds[4] == nil || p.worlds[4].frame != "T" {
		t.Fatalf("a late destroyed event of the old process took the new context: ctx %d %q, worlds %v", p.ctxID, p.ctxUniq, p.worlds)
	}
	c.contextDestroyed("S", 4, "new.2")
	if p.ctxID != 0 || len(p.worlds) != 0 {
		t.Fatalf("the new context's own destroyed event left ctx %d, worlds (with their uniqueIds) %v", p.ctxID, p.worlds)
	}
	// An executionContextsCleared names no context: it forgets them all,
	// and a committed explanation page then asks Chrome for its world.
	p.explain = &explained{committed: true}
	c.contextCreated("S", "T", 2, "new.3")
	if c.needsRecovery("T", p) != nil {
		t.Error("a second recovery while none is needed")
	}
	p.recover = recovery{}
	c.contextGone("S", func(int64, string) bool { return true })
	if p.ctxID != 0 || !c.isDirty("T") {
		t.Fatalf("cleared: ctx %d, dirty %v", p.ctxID, c.isDirty("T"))
	}
	r := c.needsRecovery("T", p)
	if r == nil || c.needsRecovery("T", p) != nil {
		t.Fatal("want exactly one recovery in flight for a committed explanation page without its context")
	}
}

// TestRecoveryKeepsTaint: a late executionContextsCleared forgets a
// tainted controls context that may still live; the recovery that finds
// the same world again keeps it tainted (its binding calls refused).
func TestRecoveryKeepsTaint(t *testing.T) {
	c := newTest(t)
	c.contextCreated("S", "T", 4, "u.4")
	c.markTainted("T", []int64{4})
	c.contextGone("S", func(int64, string) bool { return true }) // the late Cleared
	if c.taintRefusal("T", 4) != "" {
		t.Fatal("setup: the Cleared did not forget the taint")
	}
	p := c.state("T")
	if !slices.Contains(p.recover.tainted, 4) {
		t.Fatal("the forgotten tainted context is not remembered for recovery")
	}
	// The navigation as the bus delivers it (Page.frameNavigated).
	c.OnFrameNavigated(&cdpmsg.Envelope{Method: "Page.frameNavigated", SessionID: "S", Params: []byte(`{"frame":{"id":"T","url":"http://a.test/"}}`)})
	if p.recover.tainted != nil {
		t.Error("a new document kept the old document's taint memory")
	}
}

// TestOff: every method is safe on the controls switched off (nil).
func TestOff(t *testing.T) {
	var c *Controls
	a := &fakeAgent{}
	c.SetupPage("T", "S")
	for _, on := range []func(*cdpmsg.Envelope){c.OnContextCreated, c.OnContextDestroyed, c.OnContextsCleared, c.OnBindingCalled, c.OnFrameNavigated} {
		on(nil)
	}
	c.FrameNavigated("S", "T", "http://a.test/")
	c.Blocked("T", "http://b.test/", "blocked", true)
	c.DialogAnswered("S", "alert", "no agent")
	c.WindowOpened()
	c.AgentGone(a)
	c.Named(a, "S", "", []int64{1})
	c.Run()
	if c.Note(a, "S", []int64{1}) != nil || c.World() != "" || c.Session("T") != "" {
		t.Error("the controls off kept state")
	}
}

// TestLateEventsAfterPageGone: once a page is destroyed (its end in the
// page registry), late events on its session find no page: nothing is
// recorded, nothing is dirty.
func TestLateEventsAfterPageGone(t *testing.T) {
	c := newTest(t)
	c.d.Pages.(*pages.Registry).Destroyed("T")
	c.contextCreated("S", "T", 3, "late.1")
	c.FrameNavigated("S", "T", "http://a.test/")
	c.DialogAnswered("S", "alert", "late")
	if n, dirty := c.count(); n != 0 || dirty != 0 {
		t.Errorf("late events on a destroyed page's session left %d pages, %d dirty", n, dirty)
	}
}
