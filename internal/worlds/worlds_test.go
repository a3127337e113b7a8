package worlds

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/relay"
)

func ev(session, method, params string) *cdpmsg.Envelope {
	return &cdpmsg.Envelope{SessionID: session, Method: method, Params: []byte(params)}
}

func TestHide(t *testing.T) {
	reg := pages.New()
	for _, id := range []string{"TA", "TB", "TC"} {
		reg.Track(id, "C")
	}
	w := New(Deps{Pages: reg})
	a := agent{"A": "TA", "B": "TB", "C": "TC"}
	name := w.NewName("reader")
	if !strings.HasPrefix(name, "cdpguard_reader_") || !w.IsName(name) || w.IsName("cdpguard_reader_") || w.NewName("reader") == name {
		t.Fatalf("NewName = %q: not a fresh hidden name with the reserved prefix", name)
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
		if got := w.Hide(a, c.e); got != c.hide {
			t.Errorf("case %d (%s %s): Hide = %v, want %v", i, c.e.Method, c.e.Params, got, c.hide)
		}
	}
	w.Hide(a, ev("C", "Runtime.executionContextCreated", `{"context":{"id":3,"name":"`+name+`"}}`))
	w.Hide(a, ev("C", "Runtime.executionContextsCleared", `{}`))
	if w.Hide(a, ev("C", "Runtime.executionContextDestroyed", `{"executionContextId":3}`)) || w.hiddenCount() != 0 {
		t.Errorf("executionContextsCleared did not forget the session's worlds: %d kept", w.hiddenCount())
	}
	w.madeIn("", "F1", 5)
	parsed := func(ctx int, frame string) *cdpmsg.Envelope {
		return ev("A", "Debugger.scriptParsed", `{"scriptId":"1","executionContextId":`+strconv.Itoa(ctx)+`,"executionContextAuxData":{"isDefault":false,"type":"isolated","frameId":"`+frame+`"}}`)
	}
	if !w.Hide(a, parsed(5, "F1")) || w.Hide(a, parsed(5, "F2")) || w.Hide(a, parsed(6, "F1")) {
		t.Error("Debugger.scriptParsed: the guard world's scripts are not hidden, or others are")
	}
	w.OnFrameNavigated(ev("S", "Page.frameNavigated", `{"frame":{"id":"F1","url":"https://a.test/"}}`))
	if w.Hide(a, parsed(5, "F1")) {
		t.Error("Page.frameNavigated did not forget the frame's worlds")
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

// TestFrameDetached: the guard's worlds of a removed subframe are
// forgotten, under the frame and under its page, when the guard's page
// session reports Page.frameDetached; a swap (the frame moves to another
// process) keeps them, and the page's end forgets the rest. Before, a page
// that kept adding and removing iframes grew made without end (issue #22).
func TestFrameDetached(t *testing.T) {
	w := New(Deps{})
	w.madeIn("T", "T", 1)
	for i := range 100 {
		f := "F" + strconv.Itoa(i)
		w.madeIn("T", f, int64(10+i))
		w.OnFrameDetached(ev("S", "Page.frameDetached", `{"frameId":"`+f+`","reason":"remove"}`))
	}
	if got := w.all(); len(got) != 1 || got[0] != (made{frame: "T", id: 1}) {
		t.Fatalf("after 100 iframes came and went: made %v; want only the main frame's world", got)
	}
	w.madeIn("T", "FS", 50)
	w.OnFrameDetached(ev("S", "Page.frameDetached", `{"frameId":"FS","reason":"swap"}`))
	if !slices.Contains(w.all(), made{frame: "FS", id: 50, onPage: true}) || !w.madeInTarget("T", []int64{50}) {
		t.Fatal("a swapped frame's worlds were forgotten")
	}
	w.deps.Pages.(*pages.Registry).Destroyed("T")
	if got := w.all(); len(got) != 0 {
		t.Fatalf("after the page's end: made %v", got)
	}
}

// all returns every world w knows, on any page.
func (w *Worlds) all() []made {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []made
	w.each(func(_ *pages.Page, on *madeOn) bool {
		out = append(out, on.worlds...)
		return true
	})
	return out
}

// TestCommand: a command naming a guard world's context id, by any
// spelling Chrome reads, is refused on that world's page and on a session
// whose page is unknown; the same id on another page passes; Note is told
// the ids before the check and its done ends a refused command's note.
func TestCommand(t *testing.T) {
	targets := sessions{"S1": "T1", "S2": "T2"}
	var noted [][]int64
	var ended, passed int
	w := New(Deps{
		Sessions: targets,
		Note: func(_ *relay.Agent, _ string, ids []int64) func() {
			noted = append(noted, ids)
			return func() { ended++ }
		},
		Pass: func(_ *relay.Agent, _, _ string, _ []int64, done func()) relay.Verdict {
			passed++
			done()
			return relay.Verdict{}
		},
	})
	w.madeIn("T1", "T1", 4)
	cmd := func(session, params string) relay.Command {
		return relay.Command{SessionID: session, Method: "Runtime.evaluate", Params: []byte(params)}
	}
	for _, p := range []string{
		`{"expression":"1","contextId":4}`,
		`{"expression":"1","contextId":4.0}`,
		`{"expression":"1","contextId":4e0}`,
		`{"expression":"1","cont\u0065xtId":4}`,
		`{"executionContextId":4}`,
		`{"objectId":"123.4.5"}`,
		`{"callFrameId":"-7.4.0"}`,
		`{"contextId":`, // unreadable
	} {
		if v := w.Command(context.Background(), nil, cmd("S1", p)); v.Refuse == "" {
			t.Errorf("%s on the world's page passed", p)
		}
		if v := w.Command(context.Background(), nil, cmd("S9", p)); v.Refuse == "" {
			t.Errorf("%s on an unknown page passed", p)
		}
	}
	if len(noted) == 0 || ended != len(noted) || passed != 0 {
		t.Errorf("refusals: %d noted, %d ended, %d passed", len(noted), ended, passed)
	}
	for _, c := range []relay.Command{
		cmd("S2", `{"contextId":4}`), // another page's context 4
		cmd("S1", `{"contextId":5}`),
		cmd("S1", `{"expression":"4"}`),
		{Browser: true, Method: "Target.getTargets", Params: []byte(`{"contextId":4}`)},
	} {
		if v := w.Command(context.Background(), nil, c); v.Refuse != "" {
			t.Errorf("%s %s refused: %s", c.SessionID, c.Params, v.Refuse)
		}
	}
	if passed != 2 {
		t.Errorf("Pass called %d times for the two commands naming an id, want 2", passed)
	}
	if v := New(Deps{}).Command(context.Background(), nil, cmd("S1", `{"contextId":4}`)); v.Refuse != "" {
		t.Errorf("without worlds: %s", v.Refuse)
	}
}

// TestPageEndForgets: the worlds of a page, made by the controls (with
// the page) and by the reader (a frame only: its page is the registry's),
// are forgotten by the page's end in the page registry alone; another
// page's are kept.
func TestPageEndForgets(t *testing.T) {
	reg := pages.New()
	for _, id := range []string{"T", "U"} {
		reg.Track(id, "C")
		reg.Attached(id, "S"+id)
	}
	reg.OnFrameAttached(ev("ST", "Page.frameAttached", `{"frameId":"F","parentFrameId":"T"}`))
	w := New(Deps{Pages: reg})
	w.madeIn("T", "T", 1)
	w.madeIn("", "F", 2) // the reader's: its page from the registry
	w.madeIn("U", "U", 3)
	if !w.anyMade([]int64{2}) || w.madeInTarget("U", []int64{2}) {
		t.Fatal("the reader's subframe world is not recorded, or on another page")
	}
	reg.Destroyed("T")
	if w.anyMade([]int64{1, 2}) || !w.anyMade([]int64{3}) {
		t.Fatalf("after T's end: %v", w.all())
	}
}

// sessions places agent sessions on targets.
type sessions map[string]string

func (s sessions) SessionTarget(_ context.Context, _ *relay.Agent, session string) string {
	return s[session]
}

// agent places an agent's sessions on targets, as the relay does.
type agent map[string]string

func (a agent) TargetOf(session string) (string, bool) {
	t, ok := a[session]
	return t, ok
}

// hiddenCount returns how many guard worlds Hide remembers keeping from
// agent sessions, on every page.
func (w *Worlds) hiddenCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	w.hid.Range(func(_ *pages.Page, on *hidOn) bool {
		n += len(on.hid)
		return true
	})
	return n
}

// TestHiddenEndsWithPage: what Hide kept from an agent session is a
// record on the session's page, ended with it. Before, a session that
// ended with no executionContextsCleared (its page closed, its agent
// left or detached) was remembered for the guard's life. A page
// connection's own session, which the relay does not place, is recorded
// on the page of the context's frame, and its destroy still finds it.
func TestHiddenEndsWithPage(t *testing.T) {
	reg := pages.New()
	for _, id := range []string{"T", "U"} {
		reg.Track(id, "C")
	}
	w := New(Deps{Pages: reg})
	name := w.NewName("controls")
	created := func(session string, id int, frame string) *cdpmsg.Envelope {
		return ev(session, "Runtime.executionContextCreated", `{"context":{"id":`+strconv.Itoa(id)+`,"name":"`+name+`","auxData":{"frameId":"`+frame+`"}}}`)
	}
	a := agent{"S1": "T", "S2": "U"}
	for _, e := range []*cdpmsg.Envelope{created("S1", 4, "T"), created("S1", 5, "T"), created("S2", 4, "U"), created("P", 6, "U")} {
		if !w.Hide(a, e) {
			t.Fatalf("a guard world shown: %s", e.Params)
		}
	}
	if n := w.hiddenCount(); n != 4 {
		t.Fatalf("%d hidden worlds remembered, want 4", n)
	}
	reg.Destroyed("T")
	if n := w.hiddenCount(); n != 2 {
		t.Fatalf("after T's end %d hidden worlds remembered, want U's 2", n)
	}
	if !w.Hide(a, ev("S2", "Runtime.executionContextDestroyed", `{"executionContextId":4}`)) ||
		!w.Hide(a, ev("P", "Runtime.executionContextDestroyed", `{"executionContextId":6}`)) {
		t.Error("the destroy of a guard world kept from a session of U was shown")
	}
	if n := w.hiddenCount(); n != 0 {
		t.Errorf("%d hidden worlds remembered after their destroys, want 0", n)
	}
}
