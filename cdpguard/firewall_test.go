package cdpguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
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

func decodeParams(t *testing.T, b []byte) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := jsonv2.Unmarshal(b, &m); err != nil {
		t.Fatalf("params %s: %v", b, err)
	}
	return m
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
		msg := urlRefusal("Page.navigate", u)
		if !strings.HasPrefix(msg, "cdpguard: Page.navigate is refused: scheme ") {
			t.Errorf("urlRefusal(%q) = %q", u, msg)
		}
	}
	for _, u := range []string{"http://evil.test/", "about:blank", "data:text/html,x", ""} {
		if msg := urlRefusal("Page.navigate", u); msg != "" {
			t.Errorf("urlRefusal(%q) = %q, want allowed (hosts are the Fetch judge's)", u, msg)
		}
	}
	g := testGuard(t, Config{})
	if msg := g.checkURL("file:///etc/passwd"); !strings.HasPrefix(msg, "cdpguard: /json/new is refused") {
		t.Errorf("checkURL = %q", msg)
	}
}

func TestFirewallPolicyRows(t *testing.T) {
	g := testGuard(t, Config{})
	st := &agentState{user: &users.User{Key: "alice"}}
	check := func(method, u string, browser bool) relay.Verdict {
		rule, name := firewall.Lookup(method, browser)
		return g.applyRule(t.Context(), nil, st, relay.Command{Method: method, Params: params(t, map[string]any{"url": u})}, name, rule)
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
	if v := g.applyRule(t.Context(), nil, st, nav, name, rule); v.Refuse != "" || string(v.Local) != `{"frameId":"F1","errorText":"net::ERR_BLOCKED_BY_CLIENT"}` {
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

func TestFirewallPermissions(t *testing.T) {
	refused := []map[string]any{
		{"permissions": []string{"geolocation", "localNetworkAccess"}},
		{"permissions": []string{"loopbackNetwork"}},
		{"permissions": []string{"localNetwork"}},
		{"permission": map[string]any{"name": "local-network-access"}, "setting": "granted"},
		{"permission": map[string]any{"name": "loopback-network"}, "setting": "prompt"},
	}
	for _, p := range refused {
		why := localNetworkGrant(relay.Command{Method: "Browser.grantPermissions", Params: params(t, p)})
		if why == "" {
			t.Errorf("%v was not refused", p)
		}
	}
	passed := []map[string]any{
		{"permissions": []string{"geolocation", "notifications"}},
		{"permission": map[string]any{"name": "local-network-access"}, "setting": "denied"},
		{"permission": map[string]any{"name": "geolocation"}, "setting": "granted"},
	}
	for _, p := range passed {
		if why := localNetworkGrant(relay.Command{Method: "Browser.setPermission", Params: params(t, p)}); why != "" {
			t.Errorf("%v refused: %s", p, why)
		}
	}
}

func TestFirewallDownloads(t *testing.T) {
	playwright := map[string]any{"behavior": "allowAndName", "browserContextId": "CTX", "downloadPath": "/tmp/agent-chosen", "eventsEnabled": true}
	t.Run("deny", func(t *testing.T) {
		g := testGuard(t, Config{})
		st := &agentState{user: &users.User{Key: "alice"}}
		v := g.rewriteDownloads(t.Context(), st, relay.Command{Method: "Browser.setDownloadBehavior", Params: params(t, playwright)})
		if v.Refuse != "" || v.Local != nil {
			t.Fatalf("Playwright's setup must be rewritten, not refused: %+v", v)
		}
		got := decodeParams(t, v.Params)
		if got["behavior"] != "deny" || got["downloadPath"] != nil || got["browserContextId"] != "CTX" || got["eventsEnabled"] != true {
			t.Errorf("rewritten params %v", got)
		}
	})
	t.Run("dir", func(t *testing.T) {
		dir := t.TempDir()
		g := testGuard(t, Config{DownloadDir: dir})
		for _, key := range []string{"alice", "", "../../etc", "a/b"} {
			st := &agentState{user: &users.User{Key: key}}
			v := g.rewriteDownloads(t.Context(), st, relay.Command{Method: "Browser.setDownloadBehavior", Params: params(t, playwright)})
			got := decodeParams(t, v.Params)
			p, _ := got["downloadPath"].(string)
			if got["behavior"] != "allowAndName" || filepath.Dir(p) != dir {
				t.Errorf("user %q: rewritten params %v, want allowAndName under %s", key, got, dir)
			}
			if st, err := os.Stat(p); err != nil || !st.IsDir() {
				t.Errorf("user %q: directory %s not created: %v", key, p, err)
			}
		}
		st := &agentState{user: &users.User{Key: "alice"}}
		v := g.rewriteDownloads(t.Context(), st, relay.Command{Method: "Page.setDownloadBehavior", Params: params(t, map[string]any{"behavior": "deny"})})
		if got := decodeParams(t, v.Params); got["behavior"] != "deny" {
			t.Errorf("deny became %v", got)
		}
	})
	t.Run("defaults", func(t *testing.T) {
		p, err := testGuard(t, Config{}).downloadDefaults("alice", "CTX")
		if err != nil || p["behavior"] != "deny" || p["browserContextId"] != "CTX" {
			t.Errorf("no dir: %v, %v", p, err)
		}
		dir := t.TempDir()
		p, err = testGuard(t, Config{DownloadDir: dir}).downloadDefaults("", "CTX")
		if err != nil || p["behavior"] != "allowAndName" || p["downloadPath"] != filepath.Join(dir, "fallback") {
			t.Errorf("dir: %v, %v", p, err)
		}
	})
	names := map[string]bool{}
	for _, k := range []string{"", "alice", "Alice", "a/b", "a_b", "..", strings.Repeat("x", 500)} {
		n := userDirName(k)
		if names[n] || strings.ContainsAny(n, "/\\") || n == "." || n == ".." || len(n) > 80 {
			t.Errorf("userDirName(%q) = %q: duplicate or unsafe", k, n)
		}
		names[n] = true
	}
}

func TestFirewallDownloadCap(t *testing.T) {
	dir := t.TempDir()
	g := testGuard(t, Config{DownloadDir: dir, DownloadMaxBytes: 100})
	write := func(name string, n int, age time.Duration) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-age)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	write("old", 60, time.Hour)
	write("new", 60, time.Minute)
	write("guid.crdownload", 10, 0)
	g.files().enforce(t.Context(), dir, "nobody")
	left, total := measure(dir)
	if total > 100 || len(left) != 1 || left[0].name != "old" {
		t.Errorf("after enforce: %v (total %d), want only the oldest finished download", left, total)
	}
	write("small", 10, 0)
	g.files().enforce(t.Context(), dir, "nobody")
	if _, total := measure(dir); total != 70 {
		t.Errorf("under the cap nothing goes; total %d", total)
	}
}

func TestFirewallUploads(t *testing.T) {
	root := t.TempDir()
	up := filepath.Join(root, "up")
	if err := os.Mkdir(up, 0o700); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(up, "ok.txt")
	if err := os.WriteFile(ok, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(up, "passwd")); err != nil {
		t.Fatal(err)
	}
	set := func(files ...string) relay.Command {
		return relay.Command{Method: "DOM.setFileInputFiles", Params: params(t, map[string]any{"files": files, "backendNodeId": 7})}
	}
	drag := func(files ...string) relay.Command {
		return relay.Command{Method: "Input.dispatchDragEvent", Params: params(t, map[string]any{"type": "drop", "x": 1, "y": 1, "data": map[string]any{"items": []any{}, "files": files, "dragOperationsMask": 1}})}
	}

	none := testGuard(t, Config{})
	wantRefused(t, none.checkFiles(set(ok)), "DOM.setFileInputFiles", "no --upload-dir")
	wantRefused(t, none.checkFiles(drag("/etc/passwd")), "Input.dispatchDragEvent")
	if v := none.checkFiles(set()); v.Refuse != "" {
		t.Errorf("clearing a file input refused: %s", v.Refuse)
	}
	if v := none.checkFiles(relay.Command{Method: "Input.dispatchDragEvent", Params: params(t, map[string]any{"type": "dragEnter", "x": 1, "y": 1})}); v.Refuse != "" {
		t.Errorf("drag without files refused: %s", v.Refuse)
	}

	g := testGuard(t, Config{UploadDir: up})
	v := g.checkFiles(set(ok))
	if v.Refuse != "" {
		t.Fatalf("upload from the upload dir refused: %s", v.Refuse)
	}
	if got := decodeParams(t, v.Params); got["backendNodeId"] != float64(7) {
		t.Errorf("other params lost: %v", got)
	}
	wantRefused(t, g.checkFiles(set(ok, "/etc/passwd")), "DOM.setFileInputFiles", "files[1]")
	wantRefused(t, g.checkFiles(set(filepath.Join(up, "passwd"))), "DOM.setFileInputFiles", "files[0]")
	wantRefused(t, g.checkFiles(set(filepath.Join(up, "..", "..", "etc", "passwd"))), "DOM.setFileInputFiles")
	wantRefused(t, g.checkFiles(set("ok.txt")), "DOM.setFileInputFiles", "files[0]")
	wantRefused(t, g.checkFiles(drag(filepath.Join(up, "passwd"))), "Input.dispatchDragEvent")
	v = g.checkFiles(drag(ok))
	if v.Refuse != "" {
		t.Fatalf("drop from the upload dir refused: %s", v.Refuse)
	}
	data, _ := decodeParams(t, v.Params)["data"].(map[string]any)
	if files, _ := data["files"].([]any); len(files) != 1 || data["dragOperationsMask"] != float64(1) {
		t.Errorf("rewritten drag data %v", data)
	}
}

// TestUploadErrorsIdentical (#20 item 5): every path that is not a file
// inside --upload-dir gets the same answer, whether it exists or not, so an
// agent cannot probe the guard host's files: plain paths, "..", links in
// the upload directory pointing out, links to missing targets, relative
// paths.
func TestUploadErrorsIdentical(t *testing.T) {
	root := t.TempDir()
	up := filepath.Join(root, "up")
	outside := filepath.Join(root, "secret")
	for _, d := range []string{up, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	exists := filepath.Join(outside, "exists.txt")
	if err := os.WriteFile(exists, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(outside, "missing.txt")
	if err := os.Symlink(exists, filepath.Join(up, "to-exists")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(missing, filepath.Join(up, "to-missing")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(up, "dir")); err != nil {
		t.Fatal(err)
	}
	g := testGuard(t, Config{UploadDir: up})
	paths := []string{
		exists, missing,
		outside, filepath.Join(outside, "nodir", "x"),
		filepath.Join(up, "..", "secret", "exists.txt"), filepath.Join(up, "..", "secret", "missing.txt"),
		up + "/../secret/exists.txt", up + "/../secret/missing.txt",
		filepath.Join(up, "to-exists"), filepath.Join(up, "to-missing"),
		filepath.Join(up, "dir", "exists.txt"), filepath.Join(up, "dir", "missing.txt"),
		"/etc/passwd", "/etc/no-such-file-here", "/proc/self/environ",
		"secret/exists.txt", "../secret/missing.txt", "",
	}
	var first string
	for _, p := range paths {
		v := g.checkFiles(relay.Command{Method: "DOM.setFileInputFiles", Params: params(t, map[string]any{"files": []string{p}, "backendNodeId": 7})})
		if v.Refuse == "" {
			t.Fatalf("%q: not refused", p)
		}
		if first == "" {
			first = v.Refuse
			t.Logf("the one answer: %s", first)
		}
		if v.Refuse != first {
			t.Errorf("%q: answer %q differs from %q", p, v.Refuse, first)
		}
	}
}
