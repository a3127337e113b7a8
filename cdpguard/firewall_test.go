package cdpguard

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/rules"
	"github.com/cdpguard/cdpguard/internal/users"
)

// testGuard is a guard without a browser: enough for the firewall's checks
// and rewrites, which never call the browser unless a cap is enforced.
func testGuard(t *testing.T, cfg Config) *Guard {
	t.Helper()
	if cfg.Allow == nil {
		cfg.Allow = []string{"allowed.test"}
	}
	g, err := newGuard(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.stop()
		g.wg.Wait()
	})
	return g
}

func params(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonv2.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func wantRefused(t *testing.T, v relay.Verdict, method string, parts ...string) {
	t.Helper()
	prefix := "cdpguard: " + method + " is refused: "
	if !strings.HasPrefix(v.Refuse, prefix) {
		t.Errorf("verdict %+v: want a refusal starting %q", v, prefix)
		return
	}
	for _, p := range parts {
		if !strings.Contains(v.Refuse, p) {
			t.Errorf("refusal %q lacks %q", v.Refuse, p)
		}
	}
}

func TestFirewallURLRefusal(t *testing.T) {
	for _, u := range []string{"file:///etc/passwd", "chrome://version", "fi\tle:///etc/passwd", "view-source:http://allowed.test/"} {
		msg := rules.URLRefusal("Page.navigate", u)
		if !strings.HasPrefix(msg, "cdpguard: Page.navigate is refused: scheme ") {
			t.Errorf("rules.URLRefusal(%q) = %q", u, msg)
		}
	}
	for _, u := range []string{"http://evil.test/", "about:blank", "data:text/html,x", ""} {
		if msg := rules.URLRefusal("Page.navigate", u); msg != "" {
			t.Errorf("rules.URLRefusal(%q) = %q, want allowed (hosts are the Fetch judge's)", u, msg)
		}
	}
	g := testGuard(t, Config{})
	if msg := g.checkURL("file:///etc/passwd"); !strings.HasPrefix(msg, "cdpguard: /json/new is refused") {
		t.Errorf("checkURL = %q", msg)
	}
}

func TestFirewallPolicyRows(t *testing.T) {
	g := testGuard(t, Config{})
	st := &agentState{User: &users.User{Key: "alice"}}
	check := func(method, u string, browser bool) relay.Verdict {
		rule, name := firewall.Lookup(method, browser)
		return g.rs.Apply(t.Context(), nil, st, relay.Command{Method: method, Params: params(t, map[string]any{"url": u})}, name, rule)
	}
	wantRefused(t, check("Network.loadNetworkResource", "http://evil.test/x", false), "Network.loadNetworkResource", "evil.test", "bypasses request interception")
	wantRefused(t, check("Network.loadNetworkResource", "file:///etc/passwd", false), "Network.loadNetworkResource", "file")
	if v := check("Network.loadNetworkResource", "http://allowed.test/x", false); v.Refuse != "" {
		t.Errorf("allowed loadNetworkResource refused: %s", v.Refuse)
	}
	wantRefused(t, check("Fetch.continueRequest", "http://evil.test/", false), "Fetch.continueRequest", "evil.test")
	wantRefused(t, check("Network.continueInterceptedRequest", "http://evil.test/", false), "Network.continueInterceptedRequest")
	nav := relay.Command{Method: "Page.navigate", Params: params(t, map[string]any{"url": "chrome://version", "frameId": "F1"})}
	rule, name := firewall.Lookup(nav.Method, false)
	if v := g.rs.Apply(t.Context(), nil, st, nav, name, rule); v.Refuse != "" || string(v.Local) != `{"frameId":"F1","errorText":"net::ERR_BLOCKED_BY_CLIENT"}` {
		t.Errorf("Page.navigate to chrome: must be answered as Chrome answers a blocked navigation, got refuse=%q local=%s", v.Refuse, v.Local)
	}
	wantRefused(t, check("Target.createTarget", "file:///etc/passwd", true), "Target.createTarget", `"file"`)
	if v := check("Page.navigate", "http://evil.test/", false); v.Refuse != "" {
		t.Errorf("Page.navigate to a forbidden host must reach the Fetch judge (explanation page), got %s", v.Refuse)
	}
}

func TestFirewallRefuseParams(t *testing.T) {
	rule, name := firewall.Lookup("Target.createBrowserContext", true)
	for _, k := range []string{"proxyServer", "proxyBypassList", "originsWithUniversalNetworkAccess"} {
		v := refuseParams(relay.Command{Method: name, Params: params(t, map[string]any{k: "x"}), Browser: true}, name, rule)
		wantRefused(t, v, "Target.createBrowserContext", k)
	}
	if v := refuseParams(relay.Command{Method: name, Params: params(t, map[string]any{"disposeOnDetach": true})}, name, rule); v.Refuse != "" {
		t.Errorf("plain createBrowserContext refused: %s", v.Refuse)
	}
	wantRefused(t, refuseParams(relay.Command{Method: name, Params: []byte(`{"proxyServer":1,"proxyServer":2}`)}, name, rule), "Target.createBrowserContext", "unreadable")
}
