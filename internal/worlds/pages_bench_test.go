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
		if !w.Hide(nil, e) {
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

// BenchmarkContextDestroyed: a page's own context destroyed on an agent's
// session (every navigation, to every agent with Runtime on), with two
// guard worlds kept from an agent session on each of 100 pages; placed:
// the relay places the session, unplaced: every page's record is looked
// through.
func BenchmarkContextDestroyed(b *testing.B) {
	w := manyPages()
	name := w.NewName("controls")
	a := agent{}
	for i := range 100 {
		s, t := "A"+strconv.Itoa(i), "T"+strconv.Itoa(i)
		a[s] = t
		for _, id := range []int{1000 + 2*i, 1001 + 2*i} {
			w.Hide(a, ev(s, "Runtime.executionContextCreated", `{"context":{"id":`+strconv.Itoa(id)+`,"name":"`+name+`","auxData":{"frameId":"`+t+`"}}}`))
		}
	}
	e := ev("A99", "Runtime.executionContextDestroyed", `{"executionContextId":3}`)
	for _, c := range []struct {
		name string
		a    Agent
	}{{"placed", a}, {"unplaced", nil}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if w.Hide(c.a, e) {
					b.Fatal("a page's own context's destroy was hidden")
				}
			}
		})
	}
}
