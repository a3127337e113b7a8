package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// ctlEnv is the scene of the controls tests: a browser the test started
// (attach mode), a direct connection to it that acts as the human, and the
// guard attached to it with controls on.
type ctlEnv struct {
	h     *testhosts.Hosts
	g     *cdpguard.Guard
	human *cdptest.Client // straight to Chrome, never through the guard
	alice *cdptest.Client
	bob   *cdptest.Client
}

func setupControls(t *testing.T) *ctlEnv {
	t.Helper()
	if directMode() {
		t.Skip("the controls are the guard's; nothing to check against a plain Chromium")
	}
	needBrowser(t)
	e := &ctlEnv{h: testhosts.Start(t)}
	c := startChromium(t)
	openTabHTTP(t, c.URL, preexistingURL(e.h)) // the human's own tab, open before the guard came
	cfg := guardConfig(t)
	cfg.Controls = true
	cfg.DialogGrace = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := cdpguard.Attach(ctx, c.URL, cfg)
	if err != nil {
		t.Fatalf("cdpguard.Attach: %v", err)
	}
	cdptest.CloseOnCleanup(t, g)
	cdptest.WaitHTTP(t, g.URL()+"/readyz", "ok", 30*time.Second)
	e.g = g
	e.human = cdptest.Connect(t, c.URL, "")
	e.alice = cdptest.Connect(t, g.URL(), "alice")
	e.bob = cdptest.Connect(t, g.URL(), "bob")
	return e
}

// humanSession attaches the human's direct connection to a target.
func (e *ctlEnv) humanSession(t *testing.T, targetID string) string {
	t.Helper()
	res, err := e.human.CallWithin("", "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, 10*time.Second)
	if err != nil {
		t.Fatalf("human attach: %v", err)
	}
	var at struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(res, &at)
	return at.SessionID
}

// policyFor returns GET /policy as user.
func policyFor(t *testing.T, base, user string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/policy", nil)
	req.Header.Set(userHeader, user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("/policy: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return string(b)
}

// TestControls runs the controls end to end in attach mode, headless: the
// badge, its invisibility to agents, every forgery, then a human's grant.
func TestControls(t *testing.T) {
	parallelSuite(t) // own browser, guard and test hosts: runs beside the other heavy suites (CI wall time)
	e := setupControls(t)
	evil := func(name string) string { return e.h.Forbidden.Origin() + testhosts.HitPath("ctl-"+name) }

	aTarget, aSession := e.alice.OpenPage(t, userURL(e.h, "alice"))
	hs := e.humanSession(t, aTarget)

	t.Run("badge", func(t *testing.T) {
		host := waitNode(t, e.human, hs, 10*time.Second, isNamed("cdpguard-controls"))
		if host == nil {
			t.Fatalf("no controls host element on the allowed page")
		}
		if got := host.text(); !strings.Contains(got, "cdpguard active") {
			t.Errorf("badge text %q", got)
		}
		if a := strings.Join(host.Attributes, " "); !strings.Contains(a, "aria-hidden true") {
			t.Errorf("host attributes %q lack aria-hidden", a)
		}
		// A page script sees the host element, but not into its closed
		// shadow root, and no binding on its own global.
		got, err := e.alice.Eval(aSession, `(() => { const h = document.querySelector('cdpguard-controls'); return [String(!!h), String(h && h.shadowRoot), Object.keys(window).filter(k => k.startsWith('cdpguard')).join(',')].join('|'); })()`)
		if err != nil || got != `"true|null|"` {
			t.Errorf("page's view of the controls: %s %v", got, err)
		}
	})

	t.Run("preexisting tab and dialog", func(t *testing.T) { e.preexisting(t) })

	t.Run("hidden from agents", func(t *testing.T) {
		if ev := e.alice.EventsText(); strings.Contains(ev, "cdpguard_") {
			t.Errorf("LEAK: an agent saw a guard world or binding: %.500s", ev)
		}
		res, err := e.alice.CallWithin(aSession, "Page.getFrameTree", nil, 10*time.Second)
		if err != nil || strings.Contains(string(res), "cdpguard") {
			t.Errorf("frame tree shows the guard: %s %v", res, err)
		}
	})

	// The human learns the real world and binding names (the direct
	// connection sees everything), so the agent can be made to try them.
	world, binding := e.realNames(t, hs)

	// The explanation page with its button, for alice.
	e.alice.Navigate(t, aSession, evil("alice"))
	btn := waitNode(t, e.human, hs, 10*time.Second, allowButton)
	if btn == nil {
		t.Fatalf("no Allow button on the explanation page:\n%s", document(t, e.human, hs).text())
	}
	if got := btn.text(); got != "Allow "+testhosts.ForbiddenName+" for this session" {
		t.Errorf("button label %q", got)
	}
	time.Sleep(700 * time.Millisecond) // the button arms after 600 ms

	t.Run("forgery", func(t *testing.T) {
		e.forgeries(t, aTarget, aSession, hs, world, binding)
		if n := e.h.Forbidden.Total(); n > 0 {
			t.Errorf("LEAK: the forbidden listener saw %d requests: %v", n, e.h.Forbidden.Log())
		}
		if s := policyFor(t, e.g.URL(), "alice"); strings.Contains(s, testhosts.ForbiddenName) {
			t.Errorf("a forgery granted the host: %s", s)
		}
	})

	t.Run("snapshots", func(t *testing.T) { e.snapshotsHide(t, evil) })

	t.Run("grant", func(t *testing.T) {
		e.humanGrant(t, aTarget, aSession, hs, evil)
	})
}
