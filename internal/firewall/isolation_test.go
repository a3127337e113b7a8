package firewall

import (
	"reflect"
	"strings"
	"testing"
)

// scopeCases has a case per row of the isolation table (the browser-level
// allowlist); TestFirewallAllowlistRows fails when a row has none.
var scopeCases = []struct {
	method  string
	browser bool
	want    Scope
}{
	{"Browser.getVersion", true, NoIDs},
	{"Browser.close", true, NoIDs},
	{"Browser.getWindowForTarget", true, WindowOfTarget},
	{"Browser.getWindowForTarget", false, WindowOfTarget},
	{"Browser.getWindowBounds", true, Windows},
	{"Browser.getWindowBounds", false, Windows},
	{"Browser.setWindowBounds", true, Windows},
	{"Browser.setContentsSize", true, Windows},
	{"Browser.setDownloadBehavior", true, Contexts},
	{"Browser.cancelDownload", true, Contexts},
	{"Browser.grantPermissions", true, Contexts},
	{"Browser.resetPermissions", false, Contexts},
	{"Browser.setPermission", true, Contexts},
	{"Storage.getCookies", true, BrowserContexts},
	{"Storage.getCookies", false, NoIDs},
	{"Storage.setCookies", true, BrowserContexts},
	{"Storage.clearCookies", true, BrowserContexts},
	{"Target.setDiscoverTargets", true, NoIDs},
	{"Target.setAutoAttach", false, NoIDs},
	{"Target.attachToBrowserTarget", true, NoIDs},
	{"Target.getTargets", true, ListTargets},
	{"Target.getTargets", false, ListTargets},
	{"Target.getBrowserContexts", true, ListContexts},
	{"Target.createTarget", true, Contexts},
	{"Target.createBrowserContext", true, CreateContexts},
	{"Target.disposeBrowserContext", false, DisposeContexts},
	{"Target.attachToTarget", true, AttachTargets},
	{"Target.closeTarget", true, Targets},
	{"Target.activateTarget", true, Targets},
	{"Target.getTargetInfo", true, Targets},
	{"Target.detachFromTarget", true, LeaveTarget},
	{"Target.autoAttachRelated", true, Targets},
	{"Target.sendMessageToTarget", false, Targets}, // refused by the firewall table first
	{"Runtime.runIfWaitingForDebugger", true, NoIDs},
	{"Target.getDevToolsTarget", true, Targets},
}

func TestFirewallAllowlistRows(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range scopeCases {
		covered[c.method] = true
		r, _ := Lookup(c.method, c.browser)
		if c.method == "Target.sendMessageToTarget" {
			if r.Action != Refuse {
				t.Errorf("%s: %v, want Refuse", c.method, r.Action)
			}
			continue
		}
		if r.Action == Refuse {
			t.Errorf("Lookup(%q, browser=%v) refused: %s", c.method, c.browser, r.Why)
		}
		if r.Scope != c.want {
			t.Errorf("Lookup(%q, browser=%v).Scope = %v, want %v", c.method, c.browser, r.Scope, c.want)
		}
	}
	for _, row := range AllowlistRows() {
		if !covered[row] {
			t.Errorf("allowlist row %q has no test case in scopeCases", row)
		}
	}
}

// TestFirewallAllowlistRefuses checks that the browser session refuses what
// is not listed, naming the method, while page sessions pass unknown methods
// except in the browser-wide domains.
func TestFirewallAllowlistRefuses(t *testing.T) {
	for _, c := range []struct {
		method  string
		browser bool
		refuse  bool
	}{
		{"Memory.forciblyPurgeJavaScriptMemory", true, true},
		{"Memory.forciblyPurgeJavaScriptMemory", false, false},
		{"SystemInfo.getInfo", true, true},
		{"SystemInfo.getInfo", false, true},
		{"Browser.setDockTile", false, true},
		{"Browser.addPrivacySandboxEnrollmentOverride", false, true},
		{"Storage.clearDataForOrigin", true, true},
		{"Storage.clearDataForOrigin", false, false},
		{"Page.navigate", true, true},
		{"Runtime.evaluate", false, false},
		{"Brand.newMethod", true, true},
		{"Brand.newMethod", false, false},
		{"Guard.getPolicy", true, false},
	} {
		r, name := Lookup(c.method, c.browser)
		if got := r.Action == Refuse; got != c.refuse {
			t.Errorf("Lookup(%q, browser=%v) refuse=%v, want %v", c.method, c.browser, got, c.refuse)
		}
		if c.refuse && (name != c.method && !strings.HasSuffix(name, ".*")) {
			t.Errorf("Lookup(%q) names %q", c.method, name)
		}
	}
}

// TestFirewallCaps: the commands that open a tab or create a context carry
// their per-user cap, on every session, and no other row does.
func TestFirewallCaps(t *testing.T) {
	want := map[string]UserCap{"Target.createTarget": CapTabs, "Target.createBrowserContext": CapContexts}
	for _, browser := range []bool{true, false} {
		for _, m := range append(Rows(), AllowlistRows()...) {
			if r, _ := Lookup(m, browser); r.Cap != want[m] {
				t.Errorf("Lookup(%q, browser=%v).Cap = %v, want %v", m, browser, r.Cap, want[m])
			}
		}
	}
}

// TestFirewallLookupJoinsColumns: Lookup, which reads the firewall row and
// the isolation column joined by method (rows, domains), answers as the
// two tables read one after the other do (twoTables), for every row of
// both, on browser and page sessions, and for methods of no row.
func TestFirewallLookupJoinsColumns(t *testing.T) {
	methods := []string{"Runtime.evaluate", "Brand.newMethod", "Guard.nope", "Guard", "Browser", ".x", "Fetch.enable", "SystemInfo.getInfo", "Browser.setDockTile"}
	methods = append(methods, Rows()...)
	methods = append(methods, AllowlistRows()...)
	for _, m := range methods {
		for _, browser := range []bool{false, true} {
			r, name := Lookup(m, browser)
			wr, wname := twoTables(m, browser)
			if !reflect.DeepEqual(r, wr) || name != wname {
				t.Errorf("Lookup(%q, browser=%v) = %+v %q, want %+v %q", m, browser, r, name, wr, wname)
			}
		}
	}
}

// twoTables is Lookup reading the firewall table and then the isolation
// table, as it did before they were joined (2026-12-07).
func twoTables(method string, browser bool) (Rule, string) {
	r, name := Rule{}, ""
	i := strings.IndexByte(method, '.')
	var dom Rule
	var hasDom bool
	if i > 0 {
		for k, v := range rules {
			if k == method[:i]+".*" {
				dom, hasDom = v, !v.BrowserOnly || browser
			}
		}
	}
	switch row, ok := rules[method]; {
	case hasDom && dom.Action == Refuse:
		return dom, method[:i] + ".*"
	case ok && (!row.BrowserOnly || browser):
		r, name = row, method
	case hasDom:
		r, name = dom, method[:i]+".*"
	}
	if r.Action == Refuse {
		return r, name
	}
	scope, listed := isolation[method]
	if strings.HasPrefix(method, "Guard.") {
		scope, listed = NoIDs, true
	}
	wide := strings.HasPrefix(method, "Browser.") || strings.HasPrefix(method, "SystemInfo.")
	if !listed && (browser || wide) {
		return Rule{Action: Refuse, Why: whyNotListed}, method
	}
	if scope == BrowserContexts && !browser {
		scope = NoIDs
	}
	r.Scope = scope
	return r, name
}
