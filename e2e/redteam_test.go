// Red-team regression tests: a hostile agent ("mallory") drives the guard
// with a raw CDP client while another user ("alice") has a page open on an
// allowed host. Each subtest is one attack; it must be refused or harmless.

package e2e

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// rtEnv is the scene of every attack: one guard, alice with a page on the
// allowed host (a cookie and local storage set), mallory with a page of her
// own and both her browser and page sessions.
type rtEnv struct {
	h              *testhosts.Hosts
	base           string
	alice, mallory *cdptest.Client
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
	var re *cdptest.Error
	if !errors.As(err, &re) || !strings.Contains(re.Message, "cdpguard") || !strings.Contains(re.Message, rule) {
		t.Errorf("%s: got %v, want the guard's refusal naming %q", what, err, rule)
	}
}

// failed checks that a command got an error, from the guard or Chrome.
func failed(t *testing.T, what string, err error) {
	t.Helper()
	var re *cdptest.Error
	if !errors.As(err, &re) {
		t.Errorf("%s: got %v, want an error answer", what, err)
	}
}

// aliceIntact checks that alice's page is still there, hers, and unchanged.
func (e *rtEnv) aliceIntact(t *testing.T) {
	t.Helper()
	got, err := e.alice.Eval(e.aliceSession, `document.getElementById("marker").textContent + "|" + location.search`)
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
	e.alice = cdptest.Connect(t, e.base, "alice")
	e.aliceTarget, e.aliceSession = e.alice.OpenPage(t, userURL(h, "alice"))
	if _, err := e.alice.Eval(e.aliceSession, `document.cookie="secret=alice-cookie; path=/"; localStorage.setItem("k","alice-storage"); 1`); err != nil {
		t.Fatalf("alice's cookie: %v", err)
	}
	e.aliceCtx = e.alice.ContextOf(t, e.aliceTarget)
	e.mallory = cdptest.Connect(t, e.base, "mallory")
	e.malTarget, e.malPage = e.mallory.OpenPage(t, userURL(h, "mallory"))
	return e
}

// TestRedTeam runs a hostile agent's attacks against a guard shared with
// another user; every attack must be refused or harmless.
func TestRedTeam(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
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
