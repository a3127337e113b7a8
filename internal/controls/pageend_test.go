package controls

import (
	"testing"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// TestPageEndForgetsState: the page's end in the page registry alone (no
// PageGone, as the guard's wiring no longer calls it) forgets the page's
// state and the taint of its contexts.
func TestPageEndForgetsState(t *testing.T) {
	c := newTest(t)
	setup(c, "T", "S")
	c.contextCreated("S", "T", 4, "u.4")
	c.taint.mark("T", []int64{4})
	c.d.Pages.(*pages.Registry).Destroyed("T")
	if c.state("T") != nil || c.taint.refusal("T", 4) != "" {
		t.Fatalf("after the page's end: state %v, taint %q", c.state("T"), c.taint.refusal("T", 4))
	}
}
