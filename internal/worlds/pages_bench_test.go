package worlds

import (
	"strconv"
	"testing"
)

// manyPages returns worlds of 100 pages, two guard worlds each (the
// reader's and the controls'), as BenchmarkCommand has them.
func manyPages() *Worlds {
	w := New(Deps{})
	for i := range 100 {
		t := "T" + strconv.Itoa(i)
		w.madeIn(t, t, int64(1000+2*i))
		w.madeIn(t, t, int64(1001+2*i))
	}
	return w
}

// BenchmarkScriptParsed: a Debugger.scriptParsed of an isolated world
// (every guard world's script, to every agent with the debugger on)
// checked against the guard's worlds of 100 pages.
func BenchmarkScriptParsed(b *testing.B) {
	w := manyPages()
	e := ev("A1", "Debugger.scriptParsed", `{"scriptId":"9","executionContextId":1199,"executionContextAuxData":{"frameId":"T99","type":"isolated"}}`)
	for b.Loop() {
		if !w.Hide(e) {
			b.Fatal("the guard's world script was not hidden")
		}
	}
}

// BenchmarkFrameDetached: a subframe with no guard world detaching
// (every ad iframe's end) with the worlds of 100 pages known.
func BenchmarkFrameDetached(b *testing.B) {
	w := manyPages()
	e := ev("S1", "Page.frameDetached", `{"frameId":"F1","reason":"remove"}`)
	for b.Loop() {
		w.OnFrameDetached(e)
	}
}
