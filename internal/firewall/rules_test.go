package firewall

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// rowCases has at least one case per row of the table; TestFirewallRows
// fails when a row has none, so a new row cannot go untested.
var rowCases = []struct {
	row     string // the table key the case covers
	method  string
	browser bool
	want    Action
}{
	{"Target.exposeDevToolsProtocol", "Target.exposeDevToolsProtocol", false, Refuse},
	{"Target.setRemoteLocations", "Target.setRemoteLocations", true, Refuse},
	{"Target.openDevTools", "Target.openDevTools", true, Refuse},
	{"Target.sendMessageToTarget", "Target.sendMessageToTarget", false, Refuse},
	{"Fetch.*", "Fetch.enable", true, Refuse},
	{"Fetch.*", "Fetch.continueRequest", true, Refuse}, // the domain row wins on browser sessions
	{"Browser.crash", "Browser.crash", true, Refuse},
	{"Browser.crashGpuProcess", "Browser.crashGpuProcess", true, Refuse},
	{"Browser.executeBrowserCommand", "Browser.executeBrowserCommand", true, Refuse},
	{"Extensions.*", "Extensions.loadUnpacked", true, Refuse},
	{"Extensions.*", "Extensions.getStorageItems", false, Refuse},
	{"Tethering.*", "Tethering.bind", true, Refuse},
	{"PWA.*", "PWA.install", true, Refuse},
	{"Tracing.start", "Tracing.start", false, Refuse},
	{"PWA.*", "PWA.launchFilesInApp", true, Refuse},
	{"Target.createBrowserContext", "Target.createBrowserContext", true, RefuseParams},
	{"Target.createBrowserContext", "Target.createBrowserContext", false, RefuseParams}, // page sessions have the Target domain too
	{"Browser.grantPermissions", "Browser.grantPermissions", true, CheckPermissions},
	{"Browser.setPermission", "Browser.setPermission", true, CheckPermissions},
	{"Browser.setDownloadBehavior", "Browser.setDownloadBehavior", true, RewriteDownloads},
	{"Page.setDownloadBehavior", "Page.setDownloadBehavior", false, RewriteDownloads},
	{"DOM.setFileInputFiles", "DOM.setFileInputFiles", false, CheckFiles},
	{"Input.dispatchDragEvent", "Input.dispatchDragEvent", false, CheckDropFiles},
	{"Page.navigate", "Page.navigate", false, CheckNavigation},
	{"Target.createTarget", "Target.createTarget", true, CheckURL},
	{"Target.createTarget", "Target.createTarget", false, CheckURL},
	{"Network.loadNetworkResource", "Network.loadNetworkResource", false, CheckPolicy},
	{"Fetch.continueRequest", "Fetch.continueRequest", false, CheckRedirect},
	{"Network.continueInterceptedRequest", "Network.continueInterceptedRequest", false, CheckRedirect},
	{"Browser.close", "Browser.close", true, CloseOwnTargets},
	{"Target.attachToTarget", "Target.attachToTarget", false, AttachTarget},
	{"Emulation.setDeviceMetricsOverride", "Emulation.setDeviceMetricsOverride", false, CheckSizes},
	{"Emulation.setVisibleSize", "Emulation.setVisibleSize", false, CheckSizes},
	{"Page.captureScreenshot", "Page.captureScreenshot", false, CheckSizes},
	{"Page.handleJavaScriptDialog", "Page.handleJavaScriptDialog", false, DialogsAnswer},
	{"Page.handleJavaScriptDialog", "Page.handleJavaScriptDialog", true, Refuse}, // not on the browser-level allowlist
	{"Page.enable", "Page.enable", false, DialogsListen},
	{"Page.disable", "Page.disable", false, DialogsUnlisten},
	{"Target.detachFromTarget", "Target.detachFromTarget", false, Detach},
	{"Target.detachFromTarget", "Target.detachFromTarget", true, Detach},
	{"Target.setAutoAttach", "Target.setAutoAttach", false, AutoAttach},
	{"Target.setAutoAttach", "Target.setAutoAttach", true, AutoAttach},
	{"Guard.getPolicy", "Guard.getPolicy", true, GuardPolicy},
	{"Guard.enable", "Guard.enable", false, GuardEnable},
	{"Guard.disable", "Guard.disable", false, GuardDisable},
	{"Guard.read", "Guard.read", false, GuardRead},
	{"Guard.*", "Guard.nothing", false, Guard},
	{"Memory.simulatePressureNotification", "Memory.simulatePressureNotification", true, Refuse},
	{"Memory.simulatePressureNotification", "Memory.simulatePressureNotification", false, Refuse},
	{"Memory.setPressureNotificationsSuppressed", "Memory.setPressureNotificationsSuppressed", false, Refuse},
	{"Memory.getBrowserSamplingProfile", "Memory.getBrowserSamplingProfile", true, Refuse},
	{"SystemInfo.getProcessInfo", "SystemInfo.getProcessInfo", true, Refuse},
	{"Browser.getHistograms", "Browser.getHistograms", false, Refuse},
	{"Browser.getHistogram", "Browser.getHistogram", true, Refuse},
	{"Browser.getBrowserCommandLine", "Browser.getBrowserCommandLine", false, Refuse},
	{"Page.createIsolatedWorld", "Page.createIsolatedWorld", false, RefuseReserved},
	{"Page.addScriptToEvaluateOnNewDocument", "Page.addScriptToEvaluateOnNewDocument", false, RefuseReserved},
	{"Runtime.addBinding", "Runtime.addBinding", false, RefuseReserved},
	{"Runtime.removeBinding", "Runtime.removeBinding", false, RefuseReserved},
	{"Input.*", "Input.dispatchMouseEvent", false, Controls},
	{"Input.*", "Input.insertText", false, Controls},
	{"Emulation.setPageScaleFactor", "Emulation.setPageScaleFactor", false, Controls},
	{"Target.activateTarget", "Target.activateTarget", true, Controls},
	{"Target.closeTarget", "Target.closeTarget", false, Controls},
	{"Page.bringToFront", "Page.bringToFront", false, Controls},
	{"Page.close", "Page.close", false, Controls},
	{"Browser.setWindowBounds", "Browser.setWindowBounds", true, Controls},
	{"Debugger.enable", "Debugger.enable", false, Controls},
	{"Debugger.disable", "Debugger.disable", false, Controls},
	{"Debugger.getScriptSource", "Debugger.getScriptSource", false, Controls},
	{"Debugger.setBreakpoint", "Debugger.setBreakpoint", false, Controls},
	{"Debugger.setBreakpointByUrl", "Debugger.setBreakpointByUrl", false, Controls},
	{"Debugger.setBreakpointOnFunctionCall", "Debugger.setBreakpointOnFunctionCall", false, Controls},
	{"Debugger.setScriptSource", "Debugger.setScriptSource", false, Controls},
}

// passCases are methods the table must let through.
var passCases = []struct {
	method  string
	browser bool
}{
	{"Runtime.evaluate", false},
	{"Fetch.enable", false}, // page-level interception is the agent's own
	{"Fetch.failRequest", false},
	{"Brand.newMethod", false}, // unknown methods pass
	{"Fetch", false},           // no dot: no domain
	{".enable", false},
	{"", false},
	{"Browser.getVersion", true},
	{"Page.getLayoutMetrics", false},
}

func TestFirewallRows(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range rowCases {
		r, name := Lookup(c.method, c.browser)
		if r.Action != c.want {
			t.Errorf("Lookup(%q, browser=%v) = %v, want %v", c.method, c.browser, r.Action, c.want)
		}
		if name != c.row {
			t.Errorf("Lookup(%q, browser=%v) names row %q, want %q", c.method, c.browser, name, c.row)
		}
		if r.Why == "" {
			t.Errorf("%s: rule without a reason", c.row)
		}
		covered[c.row] = true
	}
	for _, row := range Rows() {
		if !covered[row] {
			t.Errorf("table row %q has no test case in rowCases", row)
		}
	}
	for _, c := range passCases {
		if r, name := Lookup(c.method, c.browser); r.Action != Pass || name != "" {
			t.Errorf("Lookup(%q, browser=%v) = %v %q, want Pass", c.method, c.browser, r.Action, name)
		}
	}
	// The controls column, on rows of other actions too.
	for method, want := range map[string]ControlsRule{
		"Input.dispatchKeyEvent":             CtlInput,
		"Input.dispatchDragEvent":            CtlInput,
		"Emulation.setDeviceMetricsOverride": CtlInput,
		"Emulation.setVisibleSize":           CtlInput,
		"Target.createTarget":                CtlWindow,
		"Target.detachFromTarget":            CtlDetach,
		"Runtime.evaluate":                   CtlNone,
	} {
		if r, _ := Lookup(method, false); r.Controls != want {
			t.Errorf("Lookup(%q).Controls = %v, want %v", method, r.Controls, want)
		}
	}
	r, _ := Lookup("Target.createBrowserContext", true)
	want := map[string]bool{"proxyServer": true, "proxyBypassList": true, "originsWithUniversalNetworkAccess": true}
	for _, p := range r.Params {
		delete(want, p)
	}
	if len(want) > 0 {
		t.Errorf("Target.createBrowserContext row misses params %v", want)
	}
}

func TestFirewallRefusedScheme(t *testing.T) {
	refused := map[string]string{
		"file:///etc/passwd":          "file",
		"FILE:///x":                   "file",
		"fi\tle:///etc/passwd":        "file", // the WHATWG parser drops tabs
		"\x00 file:///etc/passwd":     "file", // and leading C0 controls
		"chrome://version":            "chrome",
		" view-source:http://a":       "view-source",
		"devtools://devtools/x":       "devtools",
		"javascript:alert(1)":         "javascript",
		"chrome-extension://abc/x":    "chrome-extension",
		"chrome-untrusted://x":        "chrome-untrusted",
		"filesystem:http://a/x":       "filesystem",
		"mailto:a@b.test":             "mailto",
		"ws://allowed.test/":          "ws",
		"evil.test/path":              "(none)",
		"//evil.test/":                "(none)",
		":foo":                        "(none)",
		"1http://a":                   "(none)",
		"\x7fhttp://a":                "(none)",
		"http\x00s://a":               "(none)",
		"intent://x#Intent;scheme=ab": "intent",
	}
	for u, want := range refused {
		if got := RefusedScheme(u); got != want {
			t.Errorf("RefusedScheme(%q) = %q, want %q", u, got, want)
		}
	}
	for _, u := range []string{"http://a.test/", "HTTPS://x", "about:blank", "data:text/html,x", "blob:http://a/uuid", "", "  ", "\thttp://a"} {
		if s := RefusedScheme(u); s != "" {
			t.Errorf("RefusedScheme(%q) = %q, want allowed", u, s)
		}
	}
}

func TestFirewallLocalNetworkPermission(t *testing.T) {
	for _, n := range []string{"localNetworkAccess", "localNetwork", "loopbackNetwork", "local-network-access", "local-network", "loopback-network", "LOCAL_NETWORK_ACCESS", "privateNetworkAccess", "private-network-access"} {
		if !IsLocalNetworkPermission(n) {
			t.Errorf("IsLocalNetworkPermission(%q) = false", n)
		}
	}
	for _, n := range []string{"geolocation", "notifications", "localFonts", "clipboardReadWrite", "local-fonts", ""} {
		if IsLocalNetworkPermission(n) {
			t.Errorf("IsLocalNetworkPermission(%q) = true", n)
		}
	}
}

func TestFirewallResolveInside(t *testing.T) {
	root := t.TempDir()
	up := filepath.Join(root, "up")
	out := filepath.Join(root, "out")
	for _, d := range []string{up, out, filepath.Join(up, "sub")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(up, "ok.txt"))
	write(filepath.Join(up, "sub", "deep.txt"))
	write(filepath.Join(out, "secret.txt"))
	write(filepath.Join(root, "upx.txt")) // a sibling whose name starts with "up"
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(up, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(out, "secret.txt"), "escape.txt")
	link(out, "outdir")
	link("ok.txt", "rel-ok.txt")
	link("/etc/passwd", "passwd")
	// The upload directory itself reached through a link resolves too.
	upLink := filepath.Join(root, "uplink")
	if err := os.Symlink(up, upLink); err != nil {
		t.Fatal(err)
	}

	for _, p := range []string{filepath.Join(up, "ok.txt"), filepath.Join(up, "sub", "deep.txt"), filepath.Join(up, "rel-ok.txt"), filepath.Join(up, "sub", "..", "ok.txt")} {
		got, err := ResolveInside(up, p)
		if err != nil {
			t.Errorf("ResolveInside(%q) refused: %v", p, err)
			continue
		}
		if filepath.Dir(got) != up && filepath.Dir(got) != filepath.Join(up, "sub") {
			t.Errorf("ResolveInside(%q) = %q, not the resolved path", p, got)
		}
	}
	if _, err := ResolveInside(upLink, filepath.Join(upLink, "ok.txt")); err != nil {
		t.Errorf("upload dir given through a link: %v", err)
	}
	refused := []string{
		filepath.Join(out, "secret.txt"),
		filepath.Join(up, "escape.txt"),
		filepath.Join(up, "outdir", "secret.txt"),
		filepath.Join(up, "passwd"),
		filepath.Join(up, "..", "out", "secret.txt"),
		filepath.Join(root, "upx.txt"),
		filepath.Join(up, "missing.txt"),
		up, // the directory itself is not a file inside it
		"ok.txt",
		"/etc/passwd",
		"",
	}
	for _, p := range refused {
		if got, err := ResolveInside(up, p); err == nil {
			t.Errorf("ResolveInside(%q) = %q, want refused", p, got)
		} else if !errors.Is(err, ErrOutsideDir) {
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Errorf("ResolveInside(%q): error %v is not a *PathError", p, err)
			}
		}
	}
	if _, err := ResolveInside("", filepath.Join(up, "ok.txt")); !errors.Is(err, ErrOutsideDir) {
		t.Errorf("no upload dir: err = %v, want ErrOutsideDir", err)
	}
}

func BenchmarkLookup(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Lookup("Runtime.evaluate", false)
	}
}

// BenchmarkLookupRow measures a method that hits a row (Page.navigate).
func BenchmarkLookupRow(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Lookup("Page.navigate", false)
	}
}
