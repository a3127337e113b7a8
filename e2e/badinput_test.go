// Bad input (I5): malformed frames and floods from one raw agent get a CDP
// error or that agent's connection closed, and other agents keep working.

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// rawPage creates a page in c's context and attaches to it, with ids of
// its own (c's other ids are the test's), and returns the session.
func rawPage(t *testing.T, c *cdptest.Client) string {
	t.Helper()
	m, err := c.CallID(15*time.Second, 900100, "", "Target.createTarget", map[string]any{"url": "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	var ct struct{ TargetID string }
	_ = json.Unmarshal(m.Result, &ct)
	m, err = c.CallID(15*time.Second, 900101, "", "Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true})
	if err != nil {
		t.Fatal(err)
	}
	var a struct{ SessionID string }
	_ = json.Unmarshal(m.Result, &a)
	return a.SessionID
}

// evalLatency evaluates 1+1 on session of c and returns how long it took;
// no answer within 5 s is an error.
func evalLatency(t *testing.T, c *cdptest.Client, id int, session string) (time.Duration, error) {
	return evalWithin(t, c, id, session, 5*time.Second)
}

// evalWithin is evalLatency with the answer bound given.
func evalWithin(t *testing.T, c *cdptest.Client, id int, session string, bound time.Duration) (time.Duration, error) {
	start := time.Now()
	m, err := c.CallID(bound, id, session, "Runtime.evaluate", map[string]any{"expression": "1+1", "returnByValue": true})
	if err == nil && !strings.Contains(string(m.Result), `"value":2`) {
		err = fmt.Errorf("evaluate: %s", m.Raw)
	}
	return time.Since(start), err
}

// badFrame is one hostile input: frames sent in order, and how many of them
// must be answered with a CDP error if the connection stays open.
type badFrame struct {
	name   string
	binary bool
	frames []string
	errs   int
	oks    int  // successes allowed (the first of two commands with one id)
	page   bool // the frames name the agent's own page session as %[1]s
}

func badInputs(foreignSession string) []badFrame {
	slow := `{"id":10,"sessionId":"%[1]s","method":"Runtime.evaluate","params":{"expression":"new Promise(r => setTimeout(() => r(1), 700))","awaitPromise":true}}`
	return []badFrame{
		{name: "truncated JSON", frames: []string{`{"id":1,`}, errs: 1},
		{name: "not an object", frames: []string{`[1,2]`, `null`, `"Browser.getVersion"`, `42`}, errs: 4},
		{name: "empty frame", frames: []string{``}, errs: 1},
		{name: "trailing garbage", frames: []string{`{"id":1,"method":"Browser.getVersion"} x`}, errs: 1},
		{name: "duplicate id key", frames: []string{`{"id":2,"id":3,"method":"Browser.getVersion"}`}, errs: 1},
		{name: "duplicate method key", frames: []string{`{"id":2,"method":"Browser.getVersion","method":"Browser.crash"}`}, errs: 1},
		{name: "duplicate url in params", frames: []string{`{"id":4,"method":"Target.createTarget","params":{"url":"about:blank","url":"file:///etc/passwd"}}`}, errs: 1},
		{name: "duplicate key in pass-through params", page: true, frames: []string{`{"id":5,"sessionId":"%[1]s","method":"Runtime.evaluate","params":{"expression":"1","expression":"2"}}`}, errs: 1},
		{name: "invalid UTF-8 in params", frames: []string{"{\"id\":5,\"method\":\"Browser.getVersion\",\"params\":{\"x\":\"\xff\xfe\"}}"}, errs: 1},
		{name: "invalid UTF-8 in method", frames: []string{"{\"id\":5,\"method\":\"Browser.getVersion\xc0\"}"}, errs: 1},
		{name: "non-integer ids", frames: []string{
			`{"id":"6","method":"Browser.getVersion"}`, `{"id":6.5,"method":"Browser.getVersion"}`,
			`{"id":-1,"method":"Browser.getVersion"}`, `{"id":1e2,"method":"Browser.getVersion"}`,
			`{"id":99999999999999999999,"method":"Browser.getVersion"}`, `{"id":true,"method":"Browser.getVersion"}`,
			`{"id":null,"method":"Browser.getVersion"}`, `{"method":"Browser.getVersion"}`,
		}, errs: 8},
		{name: "no method", frames: []string{`{"id":7}`, `{"id":7,"method":1}`, `{"id":7,"method":""}`}, errs: 3},
		{name: "unknown session id", frames: []string{`{"id":8,"sessionId":"NOPE","method":"Runtime.evaluate","params":{"expression":"1"}}`}, errs: 1},
		{name: "another agent's session id", frames: []string{`{"id":9,"sessionId":"` + foreignSession + `","method":"Runtime.evaluate","params":{"expression":"1"}}`}, errs: 1},
		{name: "id reused while in flight", page: true, frames: []string{slow, slow}, errs: 1, oks: 1},
		{name: "binary frame", binary: true, frames: []string{`{"id":11,"method":"Browser.getVersion"}`}, errs: 1},
	}
}

// timedFirewallBadInput sends each hostile input on a fresh raw connection
// and checks that it is answered with a CDP error or that connection is
// closed with a reason, while a second agent keeps answering and the
// browser is untouched (I5).
func timedFirewallBadInput(t *testing.T) {
	g := userGuard(t, nil)
	b := cdptest.DialUser(t, g.WebSocketURL(), "bystander", cdptest.Options{})
	bSession := rawPage(t, b)
	bID := 1
	// bystander checks that the second agent still works after an attack:
	// every evaluate answers within 15 s, and the median of three is
	// within 2 s. A guard still blocked by the attacker is slow on all
	// three; one slow evaluate alone is the machine: right after the guard
	// dropped a 64 MiB frame, under -race beside other packages, CI
	// measured 3.2 s once and over 5 s another time, in a run where the
	// 64 MiB write and read took 17 s (3 to 6 s here, half of it in the
	// kernel) and internal/browser's 12 MB messages 65 s (5 s alone here).
	bystander := func(t *testing.T, what string) {
		t.Helper()
		var lat []time.Duration
		for range 3 {
			bID++
			d, err := evalWithin(t, b, bID, bSession, 15*time.Second)
			if err != nil {
				t.Fatalf("after %s the second agent's evaluate failed: %v", what, err)
			}
			lat = append(lat, d)
		}
		slices.Sort(lat)
		if lat[1] > 2*time.Second {
			t.Errorf("after %s the second agent's evaluates took %v", what, lat)
		}
	}
	for _, c := range badInputs(bSession) {
		t.Run(c.name, func(t *testing.T) {
			a := cdptest.DialUser(t, g.WebSocketURL(), "attacker", cdptest.Options{})
			session := ""
			if c.page {
				session = rawPage(t, a)
			}
			for _, f := range c.frames {
				if c.page {
					f = fmt.Sprintf(f, session)
				}
				typ := websocket.MessageText
				if c.binary {
					typ = websocket.MessageBinary
				}
				if err := a.WriteFrame(typ, []byte(f)); err != nil {
					t.Logf("write %q: %v", f, err)
				}
			}
			settle := time.Duration(0)
			if c.page {
				settle = 2 * time.Second // replies of page commands may follow the probe's
			}
			checkAnswered(t, a, c.errs, c.oks, c.frames, settle)
			bystander(t, c.name)
		})
	}
	t.Run("frame over 64 MiB", func(t *testing.T) {
		a := cdptest.DialUser(t, g.WebSocketURL(), "attacker", cdptest.Options{})
		big := append([]byte(`{"id":12,"method":"Runtime.evaluate","params":{"expression":"`), bytes.Repeat([]byte("a"), 64<<20)...)
		big = append(big, `"}}`...)
		if err := a.WriteFrame(websocket.MessageText, big); err != nil {
			t.Logf("write: %v", err)
		}
		// The guard closes the connection once it has read past the limit:
		// wait for that close (bounded) before the probe. Alone this takes
		// about 5 s; beside two other timed suites on a slowed machine the
		// write alone took 16 s and the close came more than the probe's
		// 15 s after it (a CI run here went red so). A guard that answered
		// with a CDP error instead would wait out the bound and still be
		// checked below.
		select {
		case <-a.Done():
		case <-time.After(90 * time.Second):
		}
		checkAnswered(t, a, 1, 0, []string{fmt.Sprintf("<%d-byte frame>", len(big))}, 0)
		bystander(t, "an oversized frame")
	})
	t.Run("flood", func(t *testing.T) { floodTest(t, g, b, bSession, `{"id":%d,"method":"Browser.getVersion"}`) })
	t.Run("garbage flood", func(t *testing.T) { floodTest(t, g, b, bSession, `{"id":%d,"method":`) })
	t.Run("browser untouched", func(t *testing.T) {
		select {
		case <-g.Done():
			t.Fatal("the guard stopped")
		default:
		}
		cdptest.WaitHTTP(t, g.URL()+"/readyz", "ok", 5*time.Second)
		bystander(t, "everything")
		c := cdptest.DialUser(t, g.WebSocketURL(), "newcomer", cdptest.Options{})
		s := rawPage(t, c)
		if _, err := evalLatency(t, c, 5, s); err != nil {
			t.Errorf("a new agent cannot work: %v", err)
		}
	})
}

// checkAnswered sends a probe after the bad frames and reads until its
// reply: the bad frames must have drawn errs CDP errors (and at most oks
// successes),
// unless the connection was closed with a reason. Replies are read for
// settle more after the probe's.
func checkAnswered(t *testing.T, a *cdptest.Client, errs, oks int, frames []string, settle time.Duration) {
	t.Helper()
	_ = a.WriteFrame(websocket.MessageText, []byte(`{"id":777001,"method":"Browser.getVersion"}`))
	var gotErrs []string
	var gotOK []string
	deadline := time.Now().Add(15 * time.Second)
	for {
		m, ok := a.Next(time.Until(deadline))
		if !ok {
			break
		}
		if string(m.RawID) == "777001" {
			deadline = time.Now().Add(settle)
			continue
		}
		if m.Method != "" && len(m.RawID) == 0 {
			continue // an event
		}
		if m.Error != nil {
			gotErrs = append(gotErrs, fmt.Sprintf("id=%s %s", m.RawID, m.Error.Message))
		} else {
			gotOK = append(gotOK, fmt.Sprintf("%.200s", m.Raw))
		}
	}
	select {
	case <-a.Done():
		status, reason := a.CloseStatus()
		if reason == "" {
			t.Errorf("input %.200q: connection closed with status %d and no reason", frames, status)
		} else {
			t.Logf("closed: %d %q (errors before: %q)", status, reason, gotErrs)
		}
		return
	default:
	}
	if len(gotErrs) < errs || len(gotOK) > oks {
		t.Errorf("input %.300q: got %d CDP errors %q and %d successes %q; want %d errors and at most %d successes, or a closed connection", frames, len(gotErrs), gotErrs, len(gotOK), gotOK, errs, oks)
		return
	}
	t.Logf("answered: %q", gotErrs)
}

// floodTest sends 10,000 messages from one agent within about a second while
// the bystander evaluates on its own page every 20 ms: each evaluate
// answers within 10 s, and nine in ten within 1 s: a guard held up by the
// flood where the bystander's messages pass too would slow most of them,
// while a single slow one is the machine (CI measured a slowest of 3.7 s
// beside a median of 15 ms, in a run where the test process took 7 s to
// send what takes 0.8 s alone). Here, with the user's window of 16 in
// flight or without it, Chrome answers Browser.getVersion fast enough that
// the median stays under 70 ms: the window is shown by the bench (fair).
func floodTest(t *testing.T, g *cdpguard.Guard, b *cdptest.Client, bSession, format string) {
	const n = 10000
	a := cdptest.DialUser(t, g.WebSocketURL(), "flooder", cdptest.Options{})
	stop := make(chan struct{})
	var lat []time.Duration
	var latErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		id := 5000
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			id++
			d, err := evalWithin(t, b, id, bSession, 10*time.Second)
			if err != nil {
				latErr = err
				return
			}
			lat = append(lat, d)
		}
	}()
	start := time.Now()
	sent := 0
	var werr error
	for i := 1; i <= n && werr == nil; i++ {
		werr = a.WriteFrame(websocket.MessageText, fmt.Appendf(nil, format, i))
		sent++
	}
	sendTime := time.Since(start)
	answered := 0
	deadline := time.Now().Add(30 * time.Second)
	for answered < sent {
		m, ok := a.Next(time.Until(deadline))
		if !ok {
			break
		}
		if len(m.RawID) > 0 || m.Error != nil {
			answered++
		}
	}
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	closed := false
	select {
	case <-a.Done():
		closed = true
	default:
	}
	status, reason := a.CloseStatus()
	t.Logf("sent %d in %v (write err %v); answered %d; closed=%v %d %q; bystander evaluates: %d, p50 %v, p90 %v, max %v",
		sent, sendTime.Round(time.Millisecond), werr, answered, closed, status, reason, len(lat), pct(lat, 50), pct(lat, 90), pct(lat, 100))
	if latErr != nil {
		t.Errorf("the second agent's evaluate failed during the flood: %v", latErr)
	}
	if len(lat) == 0 {
		t.Errorf("the second agent got no evaluate through during the flood")
	} else if p := pct(lat, 90); p > time.Second {
		t.Errorf("one in ten of the second agent's evaluates took over %v during the flood", p)
	}
	switch {
	case closed && reason == "":
		t.Errorf("flooder closed without a reason (status %d)", status)
	case !closed && answered < sent:
		t.Errorf("flooder: %d of %d messages answered and the connection is still open", answered, sent)
	}
}

func pct(s []time.Duration, p int) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := (len(s) - 1) * p / 100
	return s[i].Round(time.Millisecond)
}
