package rules

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// browser records the commands the stage sends on the agent's behalf.
type browser struct {
	mu    sync.Mutex
	calls []string // session method params
	err   error
}

func (b *browser) Call(_ context.Context, session, method string, params any) (jsonv2.Value, error) {
	p, _ := json.Marshal(params) // sorted keys: calls compare as strings
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, session+" "+method+" "+string(p))
	return jsonv2.Value(`{}`), b.err
}

// rig is a Stage whose policy allows only a.test, with alice's two tabs.
type rig struct {
	b       *browser
	blocked []fetchdomain.Block
	stage   *Stage
	st      *admission.Agent
}

// onT1 places every session on T1; every user has T1 and T2.
type onT1 struct{}

func (onT1) SessionTarget(context.Context, *relay.Agent, string) string { return "T1" }
func (onT1) Targets(*users.User) []string                               { return []string{"T1", "T2"} }
func (onT1) OwnsTarget(*users.User, string) bool                        { return true }

// aTest allows only a.test.
type aTest struct{}

func (aTest) Decide(_ *users.User, u string) policy.Decision {
	if strings.Contains(u, "//a.test") {
		return policy.Decision{Allowed: true, Reason: `allowed by "a.test"`}
	}
	return policy.Decision{Reason: `host is not in the allowlist`}
}

func (aTest) View(*users.User) any { return nil }

// Notify records the blocks the stage reports (Guard.requestBlocked).
func (r *rig) Notify(_ func(*users.User) bool, method string, params []byte) {
	var b fetchdomain.Block
	if method == "Guard.requestBlocked" && jsonv2.Unmarshal(params, &b) == nil {
		r.blocked = append(r.blocked, b)
	}
}

func newRig() *rig {
	r := &rig{b: &browser{}}
	r.stage = New(Deps{
		Browser:  r.b,
		Policy:   aTest{},
		Sessions: onT1{},
		Agents:   r,
		Users:    onT1{},
		Log:      slog.New(slog.DiscardHandler),
	})
	r.st = &admission.Agent{User: &users.User{Key: "alice"}}
	return r
}

func (r *rig) apply(cmd relay.Command, rule firewall.Rule) relay.Verdict {
	return r.stage.Apply(context.Background(), nil, r.st, cmd, cmd.Method, rule)
}

// TestCheckNavigation: a page's navigation to a URL no agent may open is
// answered as Chrome answers a blocked navigation (errorText, not a CDP
// error) and reported to the user's connections; on a browser session it
// is a refusal; an allowed scheme passes to the Fetch judge.
func TestCheckNavigation(t *testing.T) {
	r := newRig()
	nav := firewall.Rule{Action: firewall.CheckNavigation, Why: "agents open web pages only"}
	v := r.apply(relay.Command{Method: "Page.navigate", Params: []byte(`{"url":"file:///etc/passwd"}`), SessionID: "S1"}, nav)
	if v.Refuse != "" || !strings.Contains(string(v.Local), `"errorText":"net::ERR_BLOCKED_BY_CLIENT"`) || !strings.Contains(string(v.Local), `"frameId":"T1"`) {
		t.Errorf("page session: %+v, want a local reply with errorText and the page's frame", v)
	}
	if len(r.blocked) != 1 || r.blocked[0].URL != "file:///etc/passwd" || !r.blocked[0].TopLevel {
		t.Errorf("blocked reports %+v, want one top-level file: block", r.blocked)
	}
	v = r.apply(relay.Command{Method: "Target.createTarget", Params: []byte(`{"url":"chrome://settings"}`), Browser: true}, nav)
	if !strings.Contains(v.Refuse, `scheme "chrome"`) {
		t.Errorf("browser session: %+v, want a refusal naming the scheme", v)
	}
	if v := r.apply(relay.Command{Method: "Page.navigate", Params: []byte(`{"url":"https://evil.test/"}`), SessionID: "S1"}, nav); v.Refuse != "" || v.Local != nil {
		t.Errorf("an http URL outside the allowlist: %+v, want it passed on (the Fetch judge explains it)", v)
	}
	if v := r.apply(relay.Command{Method: "Page.navigate", Params: []byte(`{"url":`), SessionID: "S1"}, nav); !strings.Contains(v.Refuse, "unreadable params") {
		t.Errorf("broken params: %+v, want a refusal", v)
	}
}

// TestCheckNavigationInvalidURL: a URL without a scheme gets Chrome's own
// error, not a blocked navigation, and is not reported as a block; an
// empty URL (about:blank to Chrome) and a refused scheme are not it.
func TestCheckNavigationInvalidURL(t *testing.T) {
	r := newRig()
	nav := firewall.Rule{Action: firewall.CheckNavigation, Why: "agents open web pages only"}
	for _, u := range []string{"asdfasdf", "evil.test/path", "//evil.test/", " asdf "} {
		params, _ := jsonv2.Marshal(map[string]string{"url": u})
		v := r.apply(relay.Command{Method: "Page.navigate", Params: params, SessionID: "S1"}, nav)
		if v.Refuse != "Cannot navigate to invalid URL" || v.Local != nil {
			t.Errorf("%q: %+v, want Chrome's error", u, v)
		}
	}
	if len(r.blocked) != 0 {
		t.Errorf("blocked reports %+v, want none", r.blocked)
	}
	if v := r.apply(relay.Command{Method: "Page.navigate", Params: []byte(`{"url":"file:///x"}`), SessionID: "S1"}, nav); !strings.Contains(string(v.Local), "ERR_BLOCKED_BY_CLIENT") {
		t.Errorf("file: %+v, want the blocked answer", v)
	}
	if v := r.apply(relay.Command{Method: "Page.navigate", Params: []byte(`{"url":""}`), SessionID: "S1"}, nav); v.Refuse != "" || v.Local != nil {
		t.Errorf("empty URL: %+v, want it passed on", v)
	}
}

// TestCheckPolicy: a URL outside the allowlist is refused naming the
// reason, the URL and the rule.
func TestCheckPolicy(t *testing.T) {
	r := newRig()
	rule := firewall.Rule{Action: firewall.CheckPolicy, Why: "the browser would fetch it"}
	v := r.apply(relay.Command{Method: "Network.loadNetworkResource", Params: []byte(`{"url":"https://evil.test/x"}`)}, rule)
	for _, want := range []string{"Network.loadNetworkResource", "not in the allowlist", "https://evil.test/x", "the browser would fetch it"} {
		if !strings.Contains(v.Refuse, want) {
			t.Errorf("refusal %q does not name %q", v.Refuse, want)
		}
	}
	if v := r.apply(relay.Command{Method: "Network.loadNetworkResource", Params: []byte(`{"url":"https://a.test/x"}`)}, rule); v.Refuse != "" {
		t.Errorf("allowed URL refused: %q", v.Refuse)
	}
}

// TestCheckRedirect: an agent continuing its own paused request to a
// forbidden URL is refused, and the request is failed on its behalf on its
// own session, so that the page's fetch ends.
func TestCheckRedirect(t *testing.T) {
	r := newRig()
	rule := firewall.Rule{Action: firewall.CheckRedirect, Why: "redirects stay inside the allowlist"}
	v := r.apply(relay.Command{Method: "Fetch.continueRequest", Params: []byte(`{"requestId":"R7","url":"https://evil.test/"}`), SessionID: "S1"}, rule)
	if !strings.Contains(v.Refuse, "evil.test") || !strings.Contains(v.Refuse, "the request was failed") {
		t.Errorf("refusal %q, want the host and that the request was failed", v.Refuse)
	}
	if want := `S1 Fetch.failRequest {"errorReason":"BlockedByClient","requestId":"R7"}`; len(r.b.calls) != 1 || r.b.calls[0] != want {
		t.Errorf("calls %q, want %q", r.b.calls, want)
	}
	r.b.err = errors.New("no such request")
	v = r.apply(relay.Command{Method: "Network.continueInterceptedRequest", Params: []byte(`{"interceptionId":"I1","url":"https://evil.test/"}`), SessionID: "S1"}, rule)
	if !strings.Contains(v.Refuse, "failing the request failed: no such request") {
		t.Errorf("refusal %q, want the failure to fail named", v.Refuse)
	}
	if !strings.HasPrefix(r.b.calls[1], `S1 Network.continueInterceptedRequest {"errorReason":"BlockedByClient","interceptionId":"I1"}`) {
		t.Errorf("deprecated interception failed with %q", r.b.calls[1])
	}
	if v := r.apply(relay.Command{Method: "Fetch.continueRequest", Params: []byte(`{"requestId":"R8","url":"https://a.test/"}`), SessionID: "S1"}, rule); v.Refuse != "" || len(r.b.calls) != 2 {
		t.Errorf("allowed redirect: %+v, %d calls", v, len(r.b.calls))
	}
}

// TestGuardRows: Guard.enable/disable switch the agent's guard events,
// Browser.close closes only the user's own targets, a guard-only row is
// refused with its reason.
func TestGuardRows(t *testing.T) {
	r := newRig()
	if v := r.apply(relay.Command{Method: "Guard.enable"}, firewall.Rule{Action: firewall.GuardEnable}); string(v.Local) != "{}" || !r.st.GuardEvents.Load() {
		t.Errorf("Guard.enable: %+v, events %v", v, r.st.GuardEvents.Load())
	}
	if r.apply(relay.Command{Method: "Guard.disable"}, firewall.Rule{Action: firewall.GuardDisable}); r.st.GuardEvents.Load() {
		t.Error("Guard.disable left the events on")
	}
	if v := r.apply(relay.Command{Method: "Browser.close", Browser: true}, firewall.Rule{Action: firewall.CloseOwnTargets}); string(v.Local) != "{}" {
		t.Errorf("Browser.close: %+v, want a local {}", v)
	}
	want := []string{` Target.closeTarget {"targetId":"T1"}`, ` Target.closeTarget {"targetId":"T2"}`}
	if len(r.b.calls) != 2 || r.b.calls[0] != want[0] || r.b.calls[1] != want[1] {
		t.Errorf("Browser.close sent %q, want %q", r.b.calls, want)
	}
	if v := r.apply(relay.Command{Method: "Guard.secret"}, firewall.Rule{Action: firewall.Guard, Why: "the guard's own"}); v.Refuse != "cdpguard: Guard.secret is refused: the guard's own" {
		t.Errorf("guard row: %q", v.Refuse)
	}
}

// BenchmarkCheckNavigation measures the rule stage on an allowed
// Page.navigate, the row every agent navigation meets: its url read once,
// its scheme once.
func BenchmarkCheckNavigation(b *testing.B) {
	r := newRig()
	nav := firewall.Rule{Action: firewall.CheckNavigation, Why: "agents open web pages only"}
	cmd := relay.Command{Method: "Page.navigate", Params: []byte(`{"url":"https://site.test/a/page?q=1"}`), SessionID: "S1"}
	b.ReportAllocs()
	for b.Loop() {
		if v := r.apply(cmd, nav); v.Refuse != "" || v.Local != nil {
			b.Fatalf("refused: %+v", v)
		}
	}
}
