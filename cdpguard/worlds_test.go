package cdpguard

import (
	"strconv"
	"testing"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

func TestGuardWorldsHide(t *testing.T) {
	w := newGuardWorlds()
	name := w.newName("reader")
	ev := func(session, method, params string) *cdpmsg.Envelope {
		return &cdpmsg.Envelope{SessionID: session, Method: method, Params: []byte(params)}
	}
	created := `{"context":{"id":7,"origin":"","name":"` + name + `","auxData":{"isDefault":false,"type":"isolated","frameId":"F"}}}`
	cases := []struct {
		e    *cdpmsg.Envelope
		hide bool
	}{
		{ev("A", "Runtime.executionContextCreated", `{"context":{"id":1,"name":"","auxData":{"isDefault":true}}}`), false},
		{ev("A", "Runtime.executionContextCreated", `{"context":{"id":2,"name":"__playwright_utility_world__"}}`), false},
		{ev("A", "Runtime.executionContextCreated", created), true},
		{ev("A", "Runtime.executionContextCreated", `{"context":{"id":8,"name":"x`+name+`"}}`), false}, // a page's look-alike
		{ev("B", "Runtime.executionContextDestroyed", `{"executionContextId":7}`), false},              // another session's id 7
		{ev("A", "Runtime.executionContextDestroyed", `{"executionContextId":1}`), false},
		{ev("A", "Runtime.executionContextDestroyed", `{"executionContextId":7}`), true},
		{ev("A", "Runtime.executionContextDestroyed", `{"executionContextId":7}`), false},          // told once
		{ev("A", "Runtime.executionContextCreated", `{"context":{"id":9,"name":"`+name+`"`), true}, // unreadable, names the world
		{ev("A", "Page.frameNavigated", `{"frame":{"name":"`+name+`"}}`), false},
	}
	for i, c := range cases {
		if got := w.hide(c.e); got != c.hide {
			t.Errorf("case %d (%s %s): hide = %v, want %v", i, c.e.Method, c.e.Params, got, c.hide)
		}
	}
	w.hide(ev("C", "Runtime.executionContextCreated", `{"context":{"id":3,"name":"`+name+`"}}`))
	w.hide(ev("C", "Runtime.executionContextsCleared", `{}`))
	if w.hide(ev("C", "Runtime.executionContextDestroyed", `{"executionContextId":3}`)) || len(w.seen) != 0 {
		t.Errorf("executionContextsCleared did not forget the session's worlds: %v", w.seen)
	}
	w.madeIn("", "F1", 5)
	parsed := func(ctx int, frame string) *cdpmsg.Envelope {
		return ev("A", "Debugger.scriptParsed", `{"scriptId":"1","executionContextId":`+strconv.Itoa(ctx)+`,"executionContextAuxData":{"isDefault":false,"type":"isolated","frameId":"`+frame+`"}}`)
	}
	if !w.hide(parsed(5, "F1")) || w.hide(parsed(5, "F2")) || w.hide(parsed(6, "F1")) {
		t.Error("Debugger.scriptParsed: the guard world's scripts are not hidden, or others are")
	}
	w.frameGone("F1")
	if w.hide(parsed(5, "F1")) {
		t.Error("frameGone did not forget the frame's worlds")
	}
}

// TestRemoteContextID: the context id is the middle of exactly three
// dot-separated parts, as V8 spells objectId and callFrameId.
func TestRemoteContextID(t *testing.T) {
	for in, want := range map[string]int64{"123.4.56": 4, "-9.17.1": 17} {
		if got, ok := remoteContextID(in); !ok || got != want {
			t.Errorf("remoteContextID(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "4", "1.4", "1.4.5.6", "1.x.5", "1..5"} {
		if got, ok := remoteContextID(in); ok {
			t.Errorf("remoteContextID(%q) = %d, want none", in, got)
		}
	}
}

// TestWorldsFrameDetached: the guard's worlds of a removed subframe are
// forgotten, under the frame and under its page, when the guard's page
// session reports Page.frameDetached (routed by the event bus); a swap (the frame moves to another
// process) keeps them, and the page's end forgets the rest. Before, a page
// that kept adding and removing iframes grew made without end.
func TestWorldsFrameDetached(t *testing.T) {
	g := &Guard{worlds: newGuardWorlds(), grantScopes: newGrantState()}
	bus, err := g.eventBus()
	if err != nil {
		t.Fatal(err)
	}
	w := g.worlds
	w.madeIn("T", "T", 1)
	for i := range 100 {
		f := "F" + strconv.Itoa(i)
		w.madeIn("T", f, int64(10+i))
		bus.Publish(&cdpmsg.Envelope{SessionID: "S", Method: "Page.frameDetached", Params: []byte(`{"frameId":"` + f + `","reason":"remove"}`)})
	}
	if len(w.made) != 1 || len(w.made["T"]) != 1 || !w.made["T"][1] || len(w.owner) != 0 {
		t.Fatalf("after 100 iframes came and went: made %v, owner %v; want only the main frame's world", w.made, w.owner)
	}
	w.madeIn("T", "FS", 50)
	bus.Publish(&cdpmsg.Envelope{SessionID: "S", Method: "Page.frameDetached", Params: []byte(`{"frameId":"FS","reason":"swap"}`)})
	if !w.made["FS"][50] || !w.madeInTarget("T", []int64{50}) {
		t.Fatal("a swapped frame's worlds were forgotten")
	}
	w.pageGone("T")
	if len(w.made) != 0 || len(w.owner) != 0 {
		t.Fatalf("after the page's end: made %v, owner %v", w.made, w.owner)
	}
}
