package readpage

import (
	"testing"
	"time"
)

// look is one look at a page in TestSettleWatch: at ms after the first
// look (the page's clock is the reader's plus 5,000 ms), with the page's
// readable characters, DOM changes seen, and whether the reader should
// call it settled.
type look struct {
	at      int
	chars   int
	changes int
	watched bool
	quiet   float64
	want    bool
}

// TestSettleWatch: the settle rules, look by look, on the pages of issue 34:
// a page whose scripts write it 800 ms after its load is waited for; so is
// one that writes in steps; a page that never stops changing is never
// called settled (the bound ends the wait); a short page without scripts,
// or one whose scripts had the bound's time to write it, is not waited
// for; an agent's page is read at the first look only when its load ended
// the bound ago or an earlier read's observer has seen it quiet.
func TestSettleWatch(t *testing.T) {
	const loaded = 5000.0 // the page's clock at its load event, and at the first look
	static := func(at, chars int, want bool) look { return look{at: at, chars: chars, want: want} }
	for _, c := range []struct {
		name     string
		fresh    bool
		scripted bool
		loaded   float64 // the load event's end on the page's clock
		looks    []look
	}{
		{"written 800 ms after the load", true, true, loaded, []look{
			static(0, 10, false), static(500, 10, false), static(700, 10, false),
			{at: 800, chars: 200, changes: 1}, {at: 1200, chars: 200, changes: 1}, {at: 1300, chars: 200, changes: 1, want: true},
		}},
		{"written in steps", true, true, loaded, []look{
			static(0, 10, false), {at: 300, chars: 200, changes: 1}, {at: 700, chars: 200, changes: 2},
			{at: 1100, chars: 200, changes: 3}, {at: 1500, chars: 200, changes: 3}, {at: 1600, chars: 200, changes: 3, want: true},
		}},
		{"a clock that never stops", true, true, loaded, []look{
			{at: 0, chars: 200}, {at: 400, chars: 200, changes: 4}, {at: 800, chars: 200, changes: 8},
			{at: 1200, chars: 200, changes: 12}, {at: 2900, chars: 200, changes: 29},
		}},
		{"a static article", true, true, loaded, []look{static(0, 200, false), static(400, 200, false), static(500, 200, true)}},
		{"a short page without scripts", true, false, loaded, []look{static(0, 10, false), static(500, 10, true)}},
		{"a short static page with scripts", true, true, loaded, []look{
			static(0, 10, false), {at: 500, chars: 10, watched: true, quiet: 500}, {at: 1400, chars: 10, watched: true, quiet: 1400},
			{at: 1500, chars: 10, watched: true, quiet: 1500, want: true},
		}},
		{"a short page written after a still second", true, true, loaded, []look{
			static(0, 10, false), {at: 1000, chars: 10, watched: true, quiet: 1000},
			{at: 1100, chars: 200, watched: true, quiet: 0, changes: 1}, {at: 1500, chars: 200, watched: true, quiet: 400, changes: 1},
			{at: 1600, chars: 200, watched: true, quiet: 500, changes: 1, want: true},
		}},
		{"a short page whose scripts had the bound", true, true, loaded - 2600, []look{static(0, 10, false), static(500, 10, true)}},
		{"an agent's page loaded long ago", false, true, loaded - 3000, []look{static(0, 200, true)}},
		{"an agent's short page loaded long ago", false, true, loaded - 3000, []look{static(0, 10, true)}},
		{"an agent's page loaded 600 ms ago", false, true, loaded - 600, []look{static(0, 200, false), static(500, 200, true)}},
		{"an agent's page an earlier read saw quiet", false, true, loaded - 600, []look{{at: 0, chars: 200, watched: true, quiet: 600, want: true}}},
		{"an agent's page an earlier read saw change", false, true, loaded - 600, []look{{at: 0, chars: 200, watched: true, quiet: 100}}},
		{"an agent's page still being written", false, true, loaded - 600, []look{{at: 0, chars: 10, watched: true, quiet: 600}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := settleWatch{fresh: c.fresh, bound: 3 * time.Second}
			t0 := time.Now()
			for _, l := range c.looks {
				s := settleState{
					State: "complete", Now: loaded + float64(l.at), LastNet: 100, Loaded: c.loaded,
					Nodes: 10 + l.chars, Text: l.chars, Chars: l.chars, Scripted: c.scripted,
					Watched: l.watched, Changes: l.changes, QuietFor: l.quiet,
				}
				if got := w.settled(s, t0.Add(time.Duration(l.at)*time.Millisecond)); got != l.want {
					t.Fatalf("look at %d ms (%d chars, %d changes): settled %v, want %v", l.at, l.chars, l.changes, got, l.want)
				}
			}
		})
	}
}

// TestSettleWatchNetwork: a page whose last request ended under
// settleQuiet ago, or that has not loaded, has not settled.
func TestSettleWatchNetwork(t *testing.T) {
	w := settleWatch{fresh: true, bound: 3 * time.Second}
	t0 := time.Now()
	s := settleState{State: "complete", Now: 2000, LastNet: 1900, Loaded: 1000, Chars: 200}
	w.settled(s, t0)
	if w.settled(s, t0.Add(time.Second)) {
		t.Error("settled with a request that ended 100 ms ago")
	}
	s.LastNet, s.State = 100, "interactive"
	if w.settled(s, t0.Add(2*time.Second)) {
		t.Error("settled before the load")
	}
}

// TestSettleWatchInert: an inert page (nothing in it can write it after its
// load) that has loaded and shows enough readable text is settled at the
// first look, just navigated or not, with its images still arriving; a
// short inert page (a script may have removed itself) and one still loading
// wait as any other page.
func TestSettleWatchInert(t *testing.T) {
	t0 := time.Now()
	article := settleState{State: "complete", Now: 1200, LastNet: 1150, Loaded: 1100, Chars: scriptChars, Inert: true}
	for _, fresh := range []bool{true, false} {
		w := settleWatch{fresh: fresh, bound: 3 * time.Second}
		if !w.settled(article, t0) {
			t.Errorf("fresh %v: an inert loaded article is not settled at the first look", fresh)
		}
	}
	short := article
	short.Chars = scriptChars - 1
	w := settleWatch{fresh: true, bound: 3 * time.Second}
	if w.settled(short, t0) {
		t.Error("a short inert page settled at the first look")
	}
	loading := article
	loading.State, loading.Loaded = "interactive", 0
	w = settleWatch{fresh: true, bound: 3 * time.Second}
	if w.settled(loading, t0) {
		t.Error("an inert page settled before its load")
	}
}
