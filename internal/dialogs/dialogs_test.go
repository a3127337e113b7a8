package dialogs

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/cdpguard/cdpguard/internal/pages"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rec struct {
	mu  sync.Mutex
	got []map[string]any
}

func (r *rec) Send(session, method string, params any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, map[string]any{"session": session, "method": method, "params": params})
	return nil
}

func (r *rec) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// testPages places the guard's sessions of these tests: S1, and S2 after
// T1 was forgotten, are on T1 (the page registry, internal/pages, is tested
// on its own).
var testPages = sessions{"S1": "T1", "S2": "T1"}

type sessions map[string]string

func (s sessions) TargetOf(session string) (string, bool) {
	t, ok := s[session]
	return t, ok
}

// testRegistry holds the pages of testPages; each Handler keeps its state
// on them in a slot of its own, so tests do not see each other's.
var testRegistry = pages.New()

func (s sessions) Page(target string) *pages.Page {
	if !slices.Contains(slices.Collect(maps.Values(s)), target) {
		return nil // not a page: SX in TestUnplacedSession
	}
	testRegistry.Track(target, "C")
	return testRegistry.Page(target)
}

func ev(typ string) []byte {
	return []byte(`{"type":"` + typ + `","message":"m","url":"http://a.test/"}`)
}

// TestNobodyListens: with no agent listening the guard answers at once,
// whatever the grace: dismiss, except beforeunload which is accepted.
func TestNobodyListens(t *testing.T) {
	for _, c := range []struct {
		typ    string
		accept bool
	}{{"alert", false}, {"confirm", false}, {"prompt", false}, {"beforeunload", true}} {
		r := &rec{}
		h := New(r, testPages, time.Hour, nil)
		h.Attach("S1", "T1")
		h.Opening("S1", ev(c.typ))
		if r.n() != 1 {
			t.Fatalf("%s: %d answers", c.typ, r.n())
		}
		got := r.got[0]
		if got["session"] != "S1" || got["method"] != "Page.handleJavaScriptDialog" || got["params"].(map[string]any)["accept"] != c.accept {
			t.Errorf("%s: answer %v", c.typ, got)
		}
		h.Close()
	}
}

// TestAgentAnswersInGrace: a listening agent's answer is the only one.
func TestAgentAnswersInGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // time moves only when the test waits
		r := &rec{}
		grace := 50 * time.Millisecond
		h := New(r, testPages, grace, nil)
		defer h.Close()
		agent := new(int)
		h.Attach("S1", "T1")
		h.Listen(agent, "A1", "T1", true)
		h.Opening("S1", ev("prompt"))
		time.Sleep(grace - time.Millisecond)
		if r.n() != 0 {
			t.Fatal("the guard answered while an agent listens, within the grace")
		}
		done, refuse := h.Claim(agent, "A1")
		if refuse != "" || done == nil {
			t.Fatalf("claim: done=%v refuse=%q", done != nil, refuse)
		}
		done(true)
		h.Closed("S1")
		time.Sleep(2 * grace)
		if r.n() != 0 {
			t.Fatalf("the guard answered a dialog the agent answered: %v", r.got)
		}
	})
}

// TestAgentAnswerFails: when Chrome refuses the agent's answer, the guard
// answers, so the dialog is still answered exactly once.
func TestAgentAnswerFails(t *testing.T) {
	r := &rec{}
	h := New(r, testPages, time.Hour, nil)
	defer h.Close()
	agent := new(int)
	h.Attach("S1", "T1")
	h.Listen(agent, "A1", "T1", true)
	h.Opening("S1", ev("confirm"))
	done, _ := h.Claim(agent, "A1")
	done(false)
	if r.n() != 1 {
		t.Fatalf("%d answers after a failed agent answer", r.n())
	}
	done(false) // a second call changes nothing
	if r.n() != 1 {
		t.Fatalf("%d answers", r.n())
	}
}

// TestGraceThenLateAnswer: the guard answers when the grace runs out and
// the agent's late answer is refused, naming cdpguard and --dialog-grace.
func TestGraceThenLateAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		grace := 30 * time.Millisecond
		h := New(r, testPages, grace, nil)
		defer h.Close()
		agent := new(int)
		h.Attach("S1", "T1")
		h.Listen(agent, "A1", "T1", true)
		h.Opening("S1", ev("alert"))
		time.Sleep(grace)
		synctest.Wait() // the timer's answer is sent
		if r.n() != 1 {
			t.Fatal("not answered after the grace")
		}
		h.Closed("S1")
		done, late := h.Claim(agent, "A1")
		if done != nil || !strings.Contains(late, "cdpguard already dismissed this alert dialog") || !strings.Contains(late, "--dialog-grace") {
			t.Fatalf("late answer: done=%v late=%q", done != nil, late)
		}
		// A session the handler cannot place is left to Chrome.
		if done, refuse := h.Claim(agent, "other"); done != nil || refuse != "" {
			t.Fatalf("unknown session: done=%v refuse=%q", done != nil, refuse)
		}
	})
}

// TestLoop: a page that keeps opening dialogs waits one grace at most: after
// an unanswered dialog the next ones are answered at once, until the agent
// answers one again.
func TestLoop(t *testing.T) {
	// In a bubble (testing/synctest) the handler's clock and timers are
	// the bubble's: time moves only when the test waits, so "at once" and
	// "after the grace" are exact however loaded the machine.
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		grace := 40 * time.Millisecond
		h := New(r, testPages, grace, nil)
		defer h.Close()
		agent := new(int)
		h.Attach("S1", "T1")
		h.Listen(agent, "A1", "T1", true)
		h.Opening("S1", ev("alert"))
		time.Sleep(grace - time.Millisecond)
		if r.n() != 0 {
			t.Fatal("first dialog answered before the grace ran out")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if r.n() != 1 {
			t.Fatal("first dialog not answered after the grace")
		}
		for i := range 5 {
			// Each within one grace of the last unanswered one.
			time.Sleep(grace - time.Millisecond)
			h.Opening("S1", ev("alert"))
			if r.n() != 2+i {
				t.Fatalf("loop dialog %d was not answered at once", i)
			}
		}
		// A pause of one grace ends the loop: the next gets the grace again.
		time.Sleep(grace)
		h.Opening("S1", ev("alert"))
		time.Sleep(grace - time.Millisecond)
		if r.n() != 6 {
			t.Fatal("after the loop pause the guard answered within the grace")
		}
		done, _ := h.Claim(agent, "A1")
		if done == nil {
			t.Fatal("the agent could not claim the dialog within its grace")
		}
		done(true)
	})
}

// TestListenerComesLate: dialogs answered at once because nobody listened
// do not cost an agent that starts listening its grace.
func TestListenerComesLate(t *testing.T) {
	r := &rec{}
	h := New(r, testPages, time.Hour, nil)
	defer h.Close()
	h.Attach("S1", "T1")
	h.Opening("S1", ev("alert"))
	h.Listen(new(int), "A1", "T1", true)
	h.Opening("S1", ev("alert"))
	if r.n() != 1 {
		t.Fatalf("%d answers: the listening agent got no grace", r.n())
	}
}

// TestListenOff: Page.disable, a closed agent and a destroyed target stop
// the grace.
func TestListenOff(t *testing.T) {
	r := &rec{}
	h := New(r, testPages, time.Hour, nil)
	defer h.Close()
	a, b := new(int), new(int)
	h.Attach("S1", "T1")
	h.Listen(a, "A1", "T1", true)
	h.Listen(b, "B1", "T1", true)
	h.Listen(a, "A1", "", false)
	h.ForgetOwner(b)
	h.Opening("S1", ev("alert"))
	if r.n() != 1 {
		t.Fatal("answered late although no agent listens any more")
	}
	h.Listen(a, "A1", "T1", true)
	h.Forget("T1")
	h.Attach("S2", "T1")
	h.Opening("S2", ev("alert"))
	if r.n() != 2 {
		t.Fatal("a forgotten target kept its listeners")
	}
}

// TestCloseStopsTimers: Close stops pending answers.
func TestCloseStopsTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		grace := 30 * time.Millisecond
		h := New(r, testPages, grace, nil)
		h.Attach("S1", "T1")
		h.Listen(new(int), "A1", "T1", true)
		h.Opening("S1", ev("alert"))
		h.Close()
		time.Sleep(2 * grace)
		if r.n() != 0 {
			t.Fatal("answered after Close")
		}
	})
}

// TestOwnerGrace: an owner with a wait of its own (the MCP tools) keeps
// its dialogs open that long, not the handler's grace; the late-answer
// error names its flag.
func TestOwnerGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		h := New(r, testPages, time.Second, nil)
		defer h.Close()
		h.Attach("S1", "T1")
		owner := new(int)
		h.SetOwnerGrace(owner, time.Minute)
		h.Listen(owner, "A1", "T1", true)
		h.Opening("S1", ev("confirm"))
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if r.n() != 0 {
			t.Fatalf("the guard answered within the owner's wait")
		}
		time.Sleep(31 * time.Second)
		synctest.Wait()
		if r.n() != 1 {
			t.Fatalf("%d answers after the owner's wait", r.n())
		}
		if _, late := h.Claim(owner, "A1"); !strings.Contains(late, "--mcp-dialog-wait") {
			t.Errorf("late answer: %q", late)
		}
		h.ForgetOwner(owner)
	})
}

// TestUnplacedSession: a dialog on a session the page registry does not
// place (a page destroyed already, a session never set up) is still
// answered on that session, and it does not reach a listener of a page.
func TestUnplacedSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &rec{}
		h := New(r, testPages, time.Hour, nil)
		defer h.Close()
		h.Attach("S1", "T1")
		h.Listen(new(int), "A1", "T1", true)
		h.Opening("SX", ev("alert"))
		if r.n() != 1 || r.got[0]["session"] != "SX" {
			t.Fatalf("answers %v, want one at once on SX", r.got)
		}
		h.Closed("SX") // no panic, nothing else answered
		h.Opening("S1", ev("alert"))
		if r.n() != 1 {
			t.Fatal("T1's listener got no grace")
		}
	})
}
