// CDP ids are per session (issue 33): a raw client whose sessions number
// their commands alike, as Puppeteer up to 23 does, and whose commands are
// left unanswered when their target closes.

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// idsBound bounds each wait of TestRelayIDsPerSession for an answer.
const idsBound = 15 * time.Second

// TestRelayIDsPerSession: two sessions of one connection have the same id
// in flight at once and each answer comes on its own session; a command
// left unanswered when its target closes (an evaluate of a promise that
// never settles) gets no answer through the guard, as from a plain
// Chromium run beside it (its answers are logged, and more than one
// fails), and its id is free: the same ids then work on a new session and
// on the old ones; a command in flight on a session the client detaches
// gets as many answers through the guard as from Chromium (none: issue
// 32); so do commands in flight when a renderer crashes, once
// the guard has closed the crashed tab. Before ids were per session the
// guard refused the second session's id and kept the lost command's id
// taken for the connection's life.
func TestRelayIDsPerSession(t *testing.T) {
	parallelSuite(t) // own browsers: overlaps the other suites' waits
	needBrowser(t)
	chromeDetached := -1 // answers Chromium gave the command in flight on a detached session
	t.Run("chromium", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), idsBound)
		defer cancel()
		ws, err := cdptest.BrowserURL(ctx, startChromium(t).URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		idsPerSession(t, cdptest.DialUser(t, ws, "ids", cdptest.Options{}), false, func(n int) {
			chromeDetached = n
			t.Logf("Chromium gives %d answers to a command in flight on a session the client detaches", n)
		})
	})
	t.Run("guard", func(t *testing.T) {
		g := userGuard(t, nil)
		idsPerSession(t, cdptest.DialUser(t, g.WebSocketURL(), "ids", cdptest.Options{}), true, func(n int) {
			switch {
			case chromeDetached >= 0 && n != chromeDetached:
				t.Errorf("the command in flight on a detached session got %d answers through the guard, %d from Chromium", n, chromeDetached)
			case n > 1:
				t.Errorf("the command in flight on a detached session got %d answers", n)
			}
		})
	})
}

// idsPerSession runs the scenario on c; guarded says c is the guard's (no
// answer to a lost command may come); detachedAnswers is told how many
// answers the command in flight on a detached session got.
func idsPerSession(t *testing.T, c *cdptest.Client, guarded bool, detachedAnswers func(int)) {
	nextOwn := 900200 // the test's own ids on the root session
	page := func() (target, session string) {
		nextOwn += 2
		m, err := c.CallID(idsBound, nextOwn, "", "Target.createTarget", map[string]any{"url": "about:blank"})
		if err != nil {
			t.Fatal(err)
		}
		var ct struct{ TargetID string }
		_ = json.Unmarshal(m.Result, &ct)
		m, err = c.CallID(idsBound, nextOwn+1, "", "Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true})
		if err != nil {
			t.Fatal(err)
		}
		var a struct{ SessionID string }
		_ = json.Unmarshal(m.Result, &a)
		return ct.TargetID, a.SessionID
	}
	send := func(id int, session, expr string, await bool) {
		t.Helper()
		cmd := map[string]any{"id": id, "method": "Runtime.evaluate", "params": map[string]any{
			"expression": expr, "awaitPromise": await, "returnByValue": true}}
		if session != "" {
			cmd["sessionId"] = session
		}
		b, _ := json.Marshal(cmd)
		if err := c.WriteFrame(websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	_, s1 := page()
	t2, s2 := page()

	// The same id in flight on two sessions at once: s1's waits for a
	// promise that only a later command on s1 settles.
	send(1, s1, "new Promise(r => { window.release = r })", true)
	send(1, s2, "2", false)
	got := readUntil(t, c, "s2's answer to id 1", func(m cdptest.Message) bool { return answers(m, 1, s2) })
	wantValue(t, got[len(got)-1], "2")
	send(2, s1, "window.release(1), 3", false)
	var first, release *cdptest.Message
	readUntil(t, c, "s1's answers to ids 1 and 2", func(m cdptest.Message) bool {
		switch {
		case answers(m, 1, s1):
			first = &m
		case answers(m, 2, s1):
			release = &m
		case answers(m, 1, s2):
			t.Errorf("a second answer to id 1 on s2: %s", m.Raw)
		}
		return first != nil && release != nil
	})
	wantValue(t, *first, "1")
	wantValue(t, *release, "3")

	// A command left unanswered when its target closes. Id 4 answered
	// means id 3 reached the renderer (a session runs its commands in
	// order).
	send(3, s2, "new Promise(() => {})", true)
	send(4, s2, "4", false)
	readUntil(t, c, "id 4 on s2", func(m cdptest.Message) bool { return answers(m, 4, s2) })
	w := newLostWatch(s2, 3)
	nextOwn++
	w.close(t, c, t2, nextOwn)
	nextOwn++
	w.probe(t, c, nextOwn)
	w.check(t, guarded)

	// The same ids again, on a new session and on s1.
	_, s3 := page()
	for i, s := range []string{s3, s3, s1, s1} {
		id := []int{1, 3, 1, 3}[i]
		send(id, s, fmt.Sprintf("%d + 1", id), false)
		got := readUntil(t, c, fmt.Sprintf("id %d again", id), func(m cdptest.Message) bool { return answers(m, id, s) })
		wantValue(t, got[len(got)-1], fmt.Sprint(id+1))
	}

	// A command in flight on a session the client detaches
	// (Target.detachFromTarget; the tab stays open) gets what Chrome gives.
	_, s6 := page()
	send(8, s6, "new Promise(() => {})", true)
	send(9, s6, "9", false)
	readUntil(t, c, "id 9 on s6", func(m cdptest.Message) bool { return answers(m, 9, s6) })
	w = newLostWatch(s6, 8)
	nextOwn++
	w.detach(t, c, nextOwn)
	nextOwn++
	w.probe(t, c, nextOwn)
	for _, m := range w.got[8] {
		t.Logf("detached command 8's answer: %s", m.Raw)
	}
	detachedAnswers(len(w.got[8]))

	// Last, as it may take other pages' renderer with it: a renderer
	// crash with an evaluate and the crash itself in flight. The guard
	// closes a crashed tab; Chromium is told to.
	t4, s4 := page()
	send(5, s4, "new Promise(() => {})", true)
	send(6, s4, "6", false)
	readUntil(t, c, "id 6 on s4", func(m cdptest.Message) bool { return answers(m, 6, s4) })
	if err := c.WriteFrame(websocket.MessageText, []byte(fmt.Sprintf(`{"id":7,"sessionId":%q,"method":"Page.crash"}`, s4))); err != nil {
		t.Fatal(err)
	}
	w = newLostWatch(s4, 5, 7)
	readUntil(t, c, "the crash", func(m cdptest.Message) bool { w.see(m); return w.crashed })
	if !w.detached {
		nextOwn++
		w.close(t, c, t4, nextOwn)
	}
	nextOwn++
	w.probe(t, c, nextOwn)
	w.check(t, guarded)
	_, s5 := page() // the crashed session's ids are free too
	for _, id := range []int{5, 7} {
		send(id, s5, fmt.Sprintf("%d + 1", id), false)
		got := readUntil(t, c, fmt.Sprintf("id %d after the crash", id), func(m cdptest.Message) bool { return answers(m, id, s5) })
		wantValue(t, got[len(got)-1], fmt.Sprint(id+1))
	}
}

// lostWatch collects the answers to a session's commands that its end
// leaves in flight, and notes the session's crash and detach.
type lostWatch struct {
	session           string
	ids               []int
	got               map[int][]cdptest.Message
	crashed, detached bool
}

func newLostWatch(session string, ids ...int) *lostWatch {
	return &lostWatch{session: session, ids: ids, got: map[int][]cdptest.Message{}}
}

// see notes m.
func (w *lostWatch) see(m cdptest.Message) {
	for _, id := range w.ids {
		if answers(m, id, w.session) {
			w.got[id] = append(w.got[id], m)
		}
	}
	switch {
	case m.Method == "Inspector.targetCrashed" && m.SessionID == w.session:
		w.crashed = true
	case m.Method == "Target.detachedFromTarget" && strings.Contains(string(m.Params), w.session):
		w.detached = true
	}
}

// close closes target with id and reads until it is answered (an error
// too: the guard may have closed it) and the session detached.
func (w *lostWatch) close(t *testing.T, c *cdptest.Client, target string, id int) {
	t.Helper()
	w.endSession(t, c, id, "Target.closeTarget", map[string]any{"targetId": target}, "the close and the detach")
}

// detach detaches w's session with id and reads until it is answered
// and the session detached.
func (w *lostWatch) detach(t *testing.T, c *cdptest.Client, id int) {
	t.Helper()
	w.endSession(t, c, id, "Target.detachFromTarget", map[string]any{"sessionId": w.session}, "the detach")
}

// endSession sends the command that ends w's session and reads until it
// is answered and the session detached.
func (w *lostWatch) endSession(t *testing.T, c *cdptest.Client, id int, method string, params map[string]any, what string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err := c.WriteFrame(websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	answered := false
	readUntil(t, c, what, func(m cdptest.Message) bool {
		w.see(m)
		answered = answered || answers(m, id, "")
		return answered && w.detached
	})
}

// probe reads until a root command of id is answered: after the detach,
// every answer the browser (or the guard) gives for the session has come.
func (w *lostWatch) probe(t *testing.T, c *cdptest.Client, id int) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"id": id, "method": "Browser.getVersion"})
	if err := c.WriteFrame(websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	readUntil(t, c, "the probe", func(m cdptest.Message) bool { w.see(m); return answers(m, id, "") })
}

// check wants no answer to any lost command through the guard, as from
// Chrome (Chromium's own answers, run direct, are logged: at most one).
func (w *lostWatch) check(t *testing.T, guarded bool) {
	t.Helper()
	for _, id := range w.ids {
		got := w.got[id]
		for _, m := range got {
			t.Logf("lost command %d's answer: %s", id, m.Raw)
		}
		switch {
		case len(got) > 1:
			t.Errorf("lost command %d got %d answers, want one at most", id, len(got))
		case guarded && len(got) > 0:
			t.Errorf("the guard answered lost command %d; Chrome drops a command whose session ended", id)
		case len(got) == 0 && !guarded:
			t.Logf("Chromium itself gives no answer to lost command %d", id)
		}
	}
}

// answers reports whether m is the answer to id on session ("" for none).
func answers(m cdptest.Message, id int, session string) bool {
	return m.Method == "" && string(m.RawID) == fmt.Sprint(id) && m.SessionID == session
}

// readUntil reads c's frames until done says so, bounded by idsBound, and
// returns them.
func readUntil(t *testing.T, c *cdptest.Client, what string, done func(cdptest.Message) bool) []cdptest.Message {
	t.Helper()
	var got []cdptest.Message
	deadline := time.Now().Add(idsBound)
	for {
		m, ok := c.Next(time.Until(deadline))
		if !ok {
			code, reason := c.CloseStatus()
			t.Fatalf("no %s within %v (closed: %d %q); answers: %s", what, idsBound, code, reason, answersOf(got))
		}
		got = append(got, m)
		if done(m) {
			return got
		}
	}
}

// answersOf lists the answers among msgs, for a failure.
func answersOf(msgs []cdptest.Message) string {
	var out []string
	for _, m := range msgs {
		if m.Method == "" {
			out = append(out, fmt.Sprintf("%.300s", m.Raw))
		}
	}
	return strings.Join(out, "\n")
}

// wantValue checks that m is an evaluate's answer with value want.
func wantValue(t *testing.T, m cdptest.Message, want string) {
	t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil || string(r.Result.Value) != want {
		t.Fatalf("answer %s, want the value %s", m.Raw, want)
	}
}
