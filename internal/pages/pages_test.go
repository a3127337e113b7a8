package pages

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// clock is a settable clock for the time destroyed targets are kept.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTest() (*Registry, *clock) {
	r := New()
	c := &clock{t: time.Unix(1_000_000, 0)}
	r.now = c.now
	return r, c
}

// step is one event as the guard feeds it, written as a line ("_" is an
// empty id or reason):
//
//	track T C        Track(T, C)          (Target.* event naming T in context C)
//	page T           MarkPage(T)
//	web T why        MarkWeb(T, why)      ("_": web content)
//	attach T S       Attached(T, S)       (the guard's session S on page T)
//	destroy T        Destroyed(T)
//	frame S F        Page.frameAttached of F on session S
//	detach S F why   Page.frameDetached of F on session S (why: remove, swap)
//	wait D           the clock moves on by D
func (r *Registry) step(t *testing.T, c *clock, line string) {
	t.Helper()
	f := strings.Fields(line)
	arg := func(i int) string {
		if i >= len(f) {
			t.Fatalf("step %q: too few words", line)
		}
		if f[i] == "_" {
			return ""
		}
		return f[i]
	}
	switch f[0] {
	case "track":
		r.Track(arg(1), arg(2))
	case "page":
		r.MarkPage(arg(1))
	case "web":
		r.MarkWeb(arg(1), arg(2))
	case "attach":
		r.Attached(arg(1), arg(2))
	case "destroy":
		r.Destroyed(arg(1))
	case "frame":
		r.OnFrameAttached(&cdpmsg.Envelope{SessionID: arg(1), Params: []byte(`{"frameId":"` + arg(2) + `","parentFrameId":"X"}`)})
	case "detach":
		r.OnFrameDetached(&cdpmsg.Envelope{SessionID: arg(1), Params: []byte(`{"frameId":"` + arg(2) + `","reason":"` + arg(3) + `"}`)})
	case "wait":
		d, err := time.ParseDuration(arg(1))
		if err != nil {
			t.Fatal(err)
		}
		c.t = c.t.Add(d)
	default:
		t.Fatalf("unknown step %q", line)
	}
}

// want is what the registry answers after a sequence; only the fields set
// are checked ("" and nil mean no check, "none" means the empty answer).
type want struct {
	targetOf  map[string]string // session → page target
	sessionOf map[string]string // target → the guard's session
	pageOf    map[string]string // frame → page
	contextOf map[string]string // target → context
	notWeb    map[string]string // target → why
	isPage    map[string]string // target → "yes" or "none"
	live      []string          // "T/C" or "T/C/page", sorted
}

func TestSequences(t *testing.T) {
	for _, c := range []struct {
		name  string
		steps []string
		want  want
	}{{
		name:  "a page attached: its session, context and subframes",
		steps: []string{"track T C", "page T", "attach T S", "frame S F1", "frame S F2"},
		want: want{
			targetOf:  map[string]string{"S": "T", "X": "none"},
			sessionOf: map[string]string{"T": "S", "F1": "none"},
			pageOf:    map[string]string{"F1": "T", "F2": "T", "T": "none"},
			contextOf: map[string]string{"T": "C"},
			isPage:    map[string]string{"T": "yes", "F1": "none"},
			live:      []string{"T/C/page"},
		},
	}, {
		name:  "the main frame's attach is the page itself, not a subframe",
		steps: []string{"track T C", "attach T S", "frame S T"},
		want:  want{pageOf: map[string]string{"T": "none"}},
	}, {
		name: "frames on sessions that are not the guard's page sessions are ignored",
		steps: []string{"track T C", "attach T S",
			"frame X FX", // an agent's, or an out-of-process iframe's session
			"track I C", "frame I FI"},
		want: want{pageOf: map[string]string{"FX": "none", "FI": "none"}},
	}, {
		name: "frames that come before their page's session are not placed",
		// the guard's session is recorded on the read loop before any event
		// on it can be read; one that comes first is not the guard's.
		steps: []string{"frame S F0", "track T C", "attach T S", "frame S F1"},
		want:  want{pageOf: map[string]string{"F0": "none", "F1": "T"}},
	}, {
		name:  "a removed frame is forgotten, a swapped one stays on its page",
		steps: []string{"track T C", "attach T S", "frame S F1", "frame S F2", "detach S F1 swap", "detach S F2 remove"},
		want:  want{pageOf: map[string]string{"F1": "T", "F2": "none"}},
	}, {
		name: "cross-process navigation of a subframe: swapped out, back in process",
		steps: []string{"track T C", "attach T S", "frame S F",
			"detach S F swap", "track F C", "frame F FN", // F's own target and session: not the guard's page session
			"destroy F", // the out-of-process frame's target ends: F comes back
			"frame S F"},
		want: want{pageOf: map[string]string{"F": "T", "FN": "none"}, targetOf: map[string]string{"S": "T", "F": "none"}, live: []string{"T/C"}},
	}, {
		name: "cross-process navigation of the main frame keeps the target, its session and context",
		steps: []string{"track T C", "page T", "attach T S", "frame S F",
			"detach S F remove",              // the old document's frames go
			"track T C", "web T _", "page T", // targetInfoChanged for the new URL
			"frame S F2"},
		want: want{targetOf: map[string]string{"S": "T"}, sessionOf: map[string]string{"T": "S"}, pageOf: map[string]string{"F": "none", "F2": "T"}, live: []string{"T/C/page"}},
	}, {
		name:  "a page navigated to WebUI is not web content, and back again",
		steps: []string{"track T C", "web T chrome", "track U C", "web U chrome", "web U _", "web V _"},
		want:  want{notWeb: map[string]string{"T": "chrome", "U": "none", "V": "none"}, isPage: map[string]string{"T": "none"}, live: []string{"T/C", "U/C"}},
	}, {
		name: "destroyed: its session and frames go at once, its context and marks stay for late events",
		steps: []string{"track T C", "page T", "web T chrome", "attach T S", "frame S F",
			"destroy T",
			"frame S F9", // a late frame event on the dead session
		},
		want: want{
			targetOf:  map[string]string{"S": "none"},
			sessionOf: map[string]string{"T": "none"},
			pageOf:    map[string]string{"F": "none", "F9": "none"},
			contextOf: map[string]string{"T": "C"},
			notWeb:    map[string]string{"T": "chrome"},
			live:      []string{},
		},
	}, {
		name:  "a late target event does not bring a destroyed target back",
		steps: []string{"track T C", "page T", "destroy T", "track T C", "page T", "attach T S"},
		want:  want{contextOf: map[string]string{"T": "C"}, targetOf: map[string]string{"S": "none"}, isPage: map[string]string{"T": "none"}, live: []string{}},
	}, {
		name:  "destroyed before anything was known of it: still nobody's, not live",
		steps: []string{"destroy T", "track T C"},
		want:  want{contextOf: map[string]string{"T": "C"}, live: []string{}},
	}, {
		name:  "destroyed targets are kept for Keep, then dropped at the next target event",
		steps: []string{"track T C", "destroy T", "wait 59s", "track U C", "destroy U", "wait 2s", "track V C"},
		want:  want{contextOf: map[string]string{"T": "none", "U": "C", "V": "C"}, live: []string{"V/C"}},
	}, {
		name:  "a target destroyed twice is kept from its first end",
		steps: []string{"track T C", "destroy T", "wait 30s", "destroy T", "wait 31s", "track V C"},
		want:  want{contextOf: map[string]string{"T": "none"}},
	}, {
		name:  "a second guard session on a page replaces the first",
		steps: []string{"track T C", "attach T S1", "attach T S2", "frame S1 F1", "frame S2 F2"},
		want:  want{targetOf: map[string]string{"S1": "none", "S2": "T"}, sessionOf: map[string]string{"T": "S2"}, pageOf: map[string]string{"F1": "none", "F2": "T"}},
	}, {
		name:  "empty ids and contexts are ignored",
		steps: []string{"track T _", "track _ C", "page _", "attach _ S", "attach T _"},
		want:  want{contextOf: map[string]string{"T": "none"}, targetOf: map[string]string{"S": "none"}, live: []string{}},
	}, {
		name: "frames of one page are not another's",
		steps: []string{"track A C1", "attach A SA", "track B C2", "attach B SB",
			"frame SA F", "frame SB G", "destroy A"},
		want: want{pageOf: map[string]string{"F": "none", "G": "B"}, targetOf: map[string]string{"SB": "B"}, live: []string{"B/C2"}},
	}} {
		t.Run(c.name, func(t *testing.T) {
			r, clk := newTest()
			for _, s := range c.steps {
				r.step(t, clk, s)
			}
			check(t, r, c.want)
		})
	}
}

func check(t *testing.T, r *Registry, w want) {
	t.Helper()
	orNone := func(s string, ok bool) string {
		if !ok || s == "" {
			return "none"
		}
		return s
	}
	always := func(f func(string) string) func(string) (string, bool) {
		return func(k string) (string, bool) { return f(k), true }
	}
	for _, l := range []struct {
		name string
		want map[string]string
		get  func(string) (string, bool)
	}{
		{"TargetOf", w.targetOf, r.TargetOf},
		{"SessionOf", w.sessionOf, always(r.SessionOf)},
		{"PageOf", w.pageOf, always(r.PageOf)},
		{"ContextOf", w.contextOf, r.ContextOf},
		{"NotWeb", w.notWeb, always(r.NotWeb)},
		{"IsPage", w.isPage, func(k string) (string, bool) { return "yes", r.IsPage(k) }},
	} {
		for k, want := range l.want {
			if got := orNone(l.get(k)); got != want {
				t.Errorf("%s(%s) = %s, want %s", l.name, k, got, want)
			}
		}
	}
	if w.live != nil {
		var got []string
		for _, l := range r.Live() {
			s := l.ID + "/" + l.Context
			if l.Page {
				s += "/page"
			}
			got = append(got, s)
		}
		slices.Sort(got)
		if !slices.Equal(got, w.live) {
			t.Errorf("Live() = %q, want %q", got, w.live)
		}
	}
}

// TestNoOtherEvents: OnFrameAttached ignores unreadable params, a frame
// without an id and an event on no session.
func TestNoOtherEvents(t *testing.T) {
	r, _ := newTest()
	r.Track("T", "C")
	r.Attached("T", "S")
	for _, e := range []*cdpmsg.Envelope{
		{SessionID: "S", Method: "Page.frameAttached", Params: []byte(`{"frameId":`)},
		{SessionID: "S", Method: "Page.frameAttached", Params: []byte(`{"frameId":""}`)},
		{SessionID: "", Method: "Page.frameAttached", Params: []byte(`{"frameId":"F2"}`)},
	} {
		r.OnFrameAttached(e)
	}
	if len(r.frames) != 0 {
		t.Errorf("frames learned from other events: %v", r.frames)
	}
}

// TestPruneBounded: however many targets come and go, the registry keeps
// only those destroyed within Keep.
func TestPruneBounded(t *testing.T) {
	r, clk := newTest()
	for i := range 1000 {
		id := fmt.Sprintf("T%d", i)
		r.Track(id, "C")
		r.Attached(id, "S"+id)
		r.OnFrameAttached(&cdpmsg.Envelope{SessionID: "S" + id, Params: []byte(`{"frameId":"F` + id + `"}`)})
		r.Destroyed(id)
		clk.t = clk.t.Add(time.Second)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.targets); n > int(Keep/time.Second)+1 {
		t.Errorf("%d targets kept, want at most the last minute's", n)
	}
	if len(r.gone) != len(r.targets) || len(r.sessions) != 0 || len(r.frames) != 0 {
		t.Errorf("gone %d, targets %d, sessions %d, frames %d", len(r.gone), len(r.targets), len(r.sessions), len(r.frames))
	}
}

// TestConcurrent: the read loop feeds while other goroutines look up
// (run with -race).
func TestConcurrent(t *testing.T) {
	r := New()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the read loop
		defer wg.Done()
		for i := range 500 {
			id := fmt.Sprintf("T%d", i)
			r.Track(id, "C")
			r.MarkPage(id)
			r.Attached(id, "S"+id)
			r.OnFrameAttached(&cdpmsg.Envelope{SessionID: "S" + id, Params: []byte(`{"frameId":"F` + id + `"}`)})
			if i%2 == 0 {
				r.Destroyed(id)
			}
		}
	}()
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				id := fmt.Sprintf("T%d", i)
				r.TargetOf("S" + id)
				r.SessionOf(id)
				r.PageOf("F" + id)
				r.ContextOf(id)
				r.NotWeb(id)
				if i%50 == 0 {
					r.Live()
				}
			}
		}()
	}
	wg.Wait()
	if n := len(r.Live()); n != 250 {
		t.Errorf("%d live targets, want 250", n)
	}
}

// TestSetup: a wait for a target's setup ends when the setup does, whether
// it began before the target was attached or after the setup ended; it is
// bounded by its context; a destroyed target's ended setup stays ended.
func TestSetup(t *testing.T) {
	r, _ := newTest()
	waited := make(chan error, 1)
	go func() { waited <- r.AwaitSetup(t.Context(), "T") }() // before the attach
	r.Track("T", "C")
	r.Attached("T", "S")
	select {
	case err := <-waited:
		t.Fatalf("the wait ended before the setup did: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	r.SetupDone("T")
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	r.SetupDone("T") // twice: no panic
	if err := r.AwaitSetup(t.Context(), "T"); err != nil {
		t.Errorf("a wait after the setup ended: %v", err)
	}
	r.Destroyed("T")
	if err := r.AwaitSetup(t.Context(), "T"); err != nil {
		t.Errorf("a wait on a destroyed target whose setup ended: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := r.AwaitSetup(ctx, "U"); err == nil || !strings.Contains(err.Error(), "page U was not set up in time") {
		t.Errorf("a wait for a setup that never ends: %v", err)
	}
	if live := r.Live(); len(live) != 0 {
		t.Errorf("waits made live targets: %v", live)
	}
}
