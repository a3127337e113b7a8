// Red-team regression tests: a hostile agent ("mallory") drives the guard
// with a raw CDP client while another user ("alice") has a page open on an
// allowed host. Each subtest is one attack; it must be refused or harmless.

package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// rtMsg is one message a red-team client received, decoded loosely.
type rtMsg struct {
	ID        *int64          `json:"id"`
	SessionID string          `json:"sessionId"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rtClient is a raw CDP client (cdptest.Client underneath, see
// rtclient_test.go): it sends exactly what an attacker writes and keeps
// every event, so tests can look for what must never arrive. c is the
// connection; events is guarded by mu.
type rtClient struct {
	c      *websocket.Conn
	cl     rtConn
	mu     sync.Mutex
	events []rtMsg
	done   <-chan struct{}
}

// eventsText returns every event received so far, as text.
func (r *rtClient) eventsText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.events {
		fmt.Fprintf(&b, "%s %s %s\n", e.SessionID, e.Method, e.Params)
	}
	return b.String()
}

// waitEvent waits up to d for an event for which ok is true.
func (r *rtClient) waitEvent(d time.Duration, ok func(rtMsg) bool) (rtMsg, bool) {
	deadline := time.Now().Add(d)
	for seen := 0; ; {
		r.mu.Lock()
		evs := r.events[seen:]
		seen = len(r.events)
		r.mu.Unlock()
		for _, e := range evs {
			if ok(e) {
				return e, true
			}
		}
		if time.Now().After(deadline) {
			return rtMsg{}, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// openPage creates a page at u in the user's context and attaches to it
// (flat); it returns the target and session ids.
func (r *rtClient) openPage(t *testing.T, u string) (string, string) {
	t.Helper()
	res, err := r.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, 15*time.Second)
	if err != nil {
		t.Fatalf("createTarget: %v", err)
	}
	var ct struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &ct)
	res, err = r.call("", "Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, 15*time.Second)
	if err != nil {
		t.Fatalf("attachToTarget: %v", err)
	}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &at)
	for _, m := range []string{"Page.enable", "Runtime.enable"} {
		if _, err := r.call(at.SessionID, m, nil, 10*time.Second); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	if u != "" {
		r.navigate(t, at.SessionID, u)
	}
	return ct.TargetID, at.SessionID
}

// navigate navigates the page of session and waits for its load event.
func (r *rtClient) navigate(t *testing.T, session, u string) {
	t.Helper()
	r.mu.Lock()
	n := len(r.events)
	r.mu.Unlock()
	if _, err := r.call(session, "Page.navigate", map[string]any{"url": u}, 15*time.Second); err != nil {
		t.Fatalf("navigate %s: %v", u, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, e := range r.events[n:] {
			if e.SessionID == session && e.Method == "Page.loadEventFired" {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("navigate %s: no load event within 15s", u)
}

// eval evaluates expr (awaiting promises) on session and returns the value
// as JSON text.
func (r *rtClient) eval(session, expr string) (string, error) {
	res, err := r.call(session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}, 10*time.Second)
	if err != nil {
		return "", err
	}
	var v struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	_ = json.Unmarshal(res, &v)
	if len(v.ExceptionDetails) > 0 {
		return "", fmt.Errorf("exception: %s", v.ExceptionDetails)
	}
	return string(v.Result.Value), nil
}

// rtEnv is the scene of every attack: one guard, alice with a page on the
// allowed host (a cookie and local storage set), mallory with a page of her
// own and both her browser and page sessions.
type rtEnv struct {
	h              *testhosts.Hosts
	base           string
	alice, mallory *rtClient
	aliceTarget    string
	aliceSession   string
	aliceCtx       string
	malTarget      string
	malPage        string
	rec            *methodRecorder // the guard's debug lines: commands, targets
}

// evil returns a URL on the forbidden listener for attack name.
func (e *rtEnv) evil(name string) string {
	return e.h.Forbidden.Origin() + testhosts.HitPath("rt-"+name)
}

// noLeak fails t if the forbidden listener saw anything, after a short
// settle, and resets it so one leak is reported once.
func (e *rtEnv) noLeak(t *testing.T) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	if n, c := e.h.Forbidden.Total(), e.h.Forbidden.Conns(); n > 0 || c > 0 {
		t.Errorf("LEAK: forbidden listener saw %d requests, %d connections: %v", n, c, e.h.Forbidden.Log())
		e.h.Forbidden.Reset()
	}
}

// refused checks that a command got the guard's refusal naming rule.
func refused(t *testing.T, what string, err error, rule string) {
	t.Helper()
	var re *rtError
	if !errors.As(err, &re) || !strings.Contains(re.Msg, "cdpguard") || !strings.Contains(re.Msg, rule) {
		t.Errorf("%s: got %v, want the guard's refusal naming %q", what, err, rule)
	}
}

// failed checks that a command got an error, from the guard or Chrome.
func failed(t *testing.T, what string, err error) {
	t.Helper()
	var re *rtError
	if !errors.As(err, &re) {
		t.Errorf("%s: got %v, want an error answer", what, err)
	}
}

// aliceIntact checks that alice's page is still there, hers, and unchanged.
func (e *rtEnv) aliceIntact(t *testing.T) {
	t.Helper()
	got, err := e.alice.eval(e.aliceSession, `document.getElementById("marker").textContent + "|" + location.search`)
	if err != nil || !strings.Contains(got, "allowed-page-marker|?user=alice") {
		t.Errorf("alice's page after the attack: %q, %v", got, err)
	}
}

// noAlice fails t if text mentions alice's page, target or context.
func (e *rtEnv) noAlice(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range []string{"user=alice", e.aliceTarget, e.aliceCtx, "alice-cookie"} {
		if strings.Contains(text, s) {
			t.Errorf("LEAK: %s shows alice's %q: %.300s", what, s, text)
			return
		}
	}
}

func setupRedTeam(t *testing.T) *rtEnv {
	h := testhosts.Start(t)
	var rec *methodRecorder
	g := userGuard(t, func(c *cdpguard.Config) {
		rec = newMethodRecorder(c.Logger)
		c.Logger = rec.logger()
	})
	e := &rtEnv{h: h, base: g.URL(), rec: rec}
	e.alice = rtDial(t, e.base, "alice")
	e.aliceTarget, e.aliceSession = e.alice.openPage(t, userURL(h, "alice"))
	if _, err := e.alice.eval(e.aliceSession, `document.cookie="secret=alice-cookie; path=/"; localStorage.setItem("k","alice-storage"); 1`); err != nil {
		t.Fatalf("alice's cookie: %v", err)
	}
	e.aliceCtx = e.alice.contextOf(t, e.aliceTarget)
	e.mallory = rtDial(t, e.base, "mallory")
	e.malTarget, e.malPage = e.mallory.openPage(t, userURL(h, "mallory"))
	return e
}

// TestRedTeam runs a hostile agent's attacks against a guard shared with
// another user; every attack must be refused or harmless.
func TestRedTeam(t *testing.T) {
	needBrowser(t)
	e := setupRedTeam(t)
	// First: rtIsolation's auto-attach attacks leave mallory's own new tabs
	// hanging (her context only; alice's stay fine), and these open tabs.
	t.Run("browserLevel", func(t *testing.T) { rtBrowserLevel(t, e) })
	t.Run("webContentOnly", func(t *testing.T) { rtWebContent(t, e) })
	t.Run("egress", func(t *testing.T) { rtEgress(t, e) })
	t.Run("fetchTricks", func(t *testing.T) { rtFetch(t, e) })
	t.Run("isolation", func(t *testing.T) { rtIsolation(t, e) })
	t.Run("pageSessionScope", func(t *testing.T) { rtPageSession(t, e) })
	t.Run("nonFlatSession", func(t *testing.T) { rtNonFlat(t, e) })
	t.Run("files", func(t *testing.T) { rtFiles(t, e) })
	t.Run("enforcement", func(t *testing.T) { rtEnforcement(t, e) })
	t.Run("userShare", func(t *testing.T) { rtUserShare(t, e) }) // last: it spends mallory's rate budget
	e.noLeak(t)
	e.aliceIntact(t)
}
