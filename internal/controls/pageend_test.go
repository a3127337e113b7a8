package controls

import (
	"testing"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// TestPageEndForgetsState: the page's end in the page registry forgets
// the page's state and the taint of its contexts, both on its record.
func TestPageEndForgetsState(t *testing.T) {
	c := newTest(t)
	setup(c, "T", "S")
	c.contextCreated("S", "T", 4, "u.4")
	c.markTainted("T", []int64{4})
	c.d.Pages.(*pages.Registry).Destroyed("T")
	if c.state("T") != nil || c.taintRefusal("T", 4) != "" {
		t.Fatalf("after the page's end: state %v, taint %q", c.state("T"), c.taintRefusal("T", 4))
	}
}

// TestWorldsEndWithPage: a page's controls contexts are one record per
// id on the page's state (its frame and the uniqueIds of the live
// contexts with that id, two across a process swap); the page's end ends
// them with it, and a new page of the same target starts with none.
func TestWorldsEndWithPage(t *testing.T) {
	c := newTest(t)
	setup(c, "T", "S")
	c.contextCreated("S", "T", 4, "old.1")
	c.contextCreated("S", "T", 4, "new.2")
	c.contextCreated("S", "F1", 5, "sub.3")
	p := c.state("T")
	if w := p.worlds[4]; len(p.worlds) != 2 || w == nil || w.frame != "T" || len(w.uniqs) != 2 {
		t.Fatalf("worlds %v: want id 4 in T with both uniqueIds, id 5 in F1", p.worlds)
	}
	c.d.Pages.(*pages.Registry).Destroyed("T")
	if n, _ := c.count(); n != 0 || c.state("T") != nil {
		t.Fatalf("after the page's end: %d pages' states kept", n)
	}
	c.Named(&fakeAgent{}, "S", "T", []int64{4, 5})
	if c.taintRefusal("T", 4)+c.taintRefusal("T", 5) != "" {
		t.Error("a context of an ended page was tainted")
	}
}
