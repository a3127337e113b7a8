package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// diffGrace is the guard's --dialog-grace in the differential suite: short,
// so that the late-answer scenarios stay quick.
const diffGrace = time.Second

// allowedDiff is one difference between what a client observes against
// Chromium directly and through cdpguard that is there on purpose. Direct
// and Guard are the observations as JSON, exactly.
type allowedDiff struct {
	Direct, Guard string
	Why           string
}

// allowedDiffs is the one table of allowed differences, keyed
// "<client>/<scenario>" ("download-dir:" in front for the guard with
// --download-dir). Any other difference fails TestDifferential, and so does
// an entry whose difference is gone.
var allowedDiffs = map[string]allowedDiff{
	"playwright/nav-blocked-host": {
		Direct: `{"status":200}`, Guard: `{"status":403}`,
		Why: "the allowlist: the guard answers a blocked top-level navigation with its 403 explanation page",
	},
	"puppeteer/nav-blocked-host": {
		Direct: `{"status":200}`, Guard: `{"status":403}`,
		Why: "the allowlist: the guard answers a blocked top-level navigation with its 403 explanation page",
	},
	"chromedp/nav-blocked-host": {
		Direct: `{"status":200}`, Guard: `{"status":403}`,
		Why: "the allowlist: the guard answers a blocked top-level navigation with its 403 explanation page",
	},
	"playwright/nav-refused-scheme": {
		Direct: `{"error":null}`, Guard: `{"error":"page.goto: net::ERR_BLOCKED_BY_CLIENT at file:///etc/hostname"}`,
		Why: "file access: agents never open file: URLs; the refusal has Chrome's own shape (errorText), as for page.route's abort('blockedbyclient')",
	},
	"puppeteer/nav-refused-scheme": {
		Direct: `{"error":null}`, Guard: `{"error":"net::ERR_BLOCKED_BY_CLIENT at file:///etc/hostname"}`,
		Why: "file access: agents never open file: URLs; the refusal has Chrome's own shape (errorText), as for request.abort('blockedbyclient')",
	},
	"chromedp/nav-refused-scheme": {
		Direct: `{"error":null}`, Guard: `{"error":"page load error net::ERR_BLOCKED_BY_CLIENT"}`,
		Why: "file access: agents never open file: URLs; the refusal has Chrome's own shape (errorText)",
	},
	"playwright/dialog-late-accept": {
		Direct: `{"acceptError":null,"result":true}`,
		Guard:  `{"acceptError":"dialog.accept: Protocol error (Page.handleJavaScriptDialog): cdpguard already dismissed this confirm dialog: no answer came within --dialog-grace (1s); answer sooner or raise --dialog-grace (CDPGUARD_DIALOG_GRACE)","result":false}`,
		Why:    "dialogs: no dialog hangs a page longer than --dialog-grace (I4); the late answer is told the truth",
	},
	"puppeteer/dialog-late-accept": {
		Direct: `{"acceptError":null,"result":true}`,
		Guard:  `{"acceptError":"Protocol error (Page.handleJavaScriptDialog): cdpguard already dismissed this confirm dialog: no answer came within --dialog-grace (1s); answer sooner or raise --dialog-grace (CDPGUARD_DIALOG_GRACE)","result":false}`,
		Why:    "dialogs: no dialog hangs a page longer than --dialog-grace (I4); the late answer is told the truth",
	},
	"chromedp/dialog-late-accept": {
		Direct: `{"acceptError":null,"result":true}`,
		Guard:  `{"acceptError":"cdpguard already dismissed this confirm dialog: no answer came within --dialog-grace (1s); answer sooner or raise --dialog-grace (CDPGUARD_DIALOG_GRACE) (-32000)","result":false}`,
		Why:    "dialogs: no dialog hangs a page longer than --dialog-grace (I4); the late answer is told the truth",
	},
	"mcp/dialog-late-accept": {
		Direct: `{"handled":"ok","pageSaw":"\"true\""}`,
		Guard:  `{"handled":{"error":"Error: The tool \"browser_handle_dialog\" can only be used when there is related modal state present."},"pageSaw":"\"false\""}`,
		Why:    "dialogs: the guard dismissed the dialog after --dialog-grace; @playwright/mcp saw it close (Page.javascriptDialogClosed) and refuses browser_handle_dialog itself, so the guard's error never comes into play",
	},
	"playwright/download": {
		Direct: `{"content":"hello download\n","failure":null,"inPlaywrightDir":true,"pathError":null,"suggested":"hello.txt"}`,
		Guard:  `{"content":null,"failure":"canceled","inPlaywrightDir":null,"pathError":null,"suggested":"hello.txt"}`,
		Why:    "downloads policy: without --download-dir every download is denied, and the client sees it end as canceled (download.failure())",
	},
	"puppeteer/download": {
		Direct: `{"begun":{"suggested":"hello.txt"},"states":["completed"]}`,
		Guard:  `{"begun":{"suggested":"hello.txt"},"states":["canceled"]}`,
		Why:    "downloads policy: without --download-dir every download is denied, and Browser.downloadProgress ends it as canceled",
	},
	"chromedp/download": {
		Direct: `{"state":"completed"}`, Guard: `{"state":"canceled"}`,
		Why: "downloads policy: without --download-dir every download is denied, and Browser.downloadProgress ends it as canceled",
	},
	"download-dir:playwright/download": {
		Direct: `{"content":"hello download\n","failure":null,"inPlaywrightDir":true,"pathError":null,"suggested":"hello.txt"}`,
		Guard:  `{"content":null,"failure":null,"inPlaywrightDir":true,"pathError":null,"suggested":"hello.txt"}`,
		Why:    "file access: the file lands in the user's --download-dir on the guard's host (Browser.downloadProgress filePath names it); Chrome never writes where an agent asks, so download.path() names Playwright's own directory, which stays empty",
	},
}

// diffServer serves the differential pages on loopback. Browsers reach it
// as allowed.test (allowed) and as blocked.test (refused by the guard); it
// counts requests for the refused name.
type diffServer struct {
	port        int
	blockedHits atomic.Int64
}

func (s *diffServer) base() string {
	return "http://" + testhosts.AllowedName + ":" + strconv.Itoa(s.port)
}
func (s *diffServer) blocked() string { return "http://blocked.test:" + strconv.Itoa(s.port) }

func startDiffServer(t *testing.T) *diffServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &diffServer{port: ln.Addr().(*net.TCPAddr).Port}
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, "<!doctype html><html><head><title>diff</title></head><body>"+body+"</body></html>")
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/page", page(`<p id="marker">diff-page</p>`))
	mux.Handle("/popup", page(`<p id="marker">diff-popup</p>`))
	mux.Handle("/aborted", page(`<p id="marker">not aborted</p>`))
	mux.Handle("/beforeunload", page(`<p id="marker">bu</p><button id="touch">touch</button>
<script>addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = 'leave?'; });</script>`))
	mux.Handle("/dlpage", page(`<a id="dl" href="/dl">download</a>`))
	mux.HandleFunc("/dl", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="hello.txt"`)
		fmt.Fprint(w, "hello download\n")
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.Host, "blocked.test") {
			s.blockedHits.Add(1)
		}
		mux.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// TestDifferential runs one list of client scenarios (Playwright and
// Puppeteer in e2e/clients/differential.mjs, chromedp in
// differential_chromedp_test.go) against a directly driven Chromium and
// through cdpguard, and compares what each client observed: every
// difference must be in allowedDiffs.
func TestDifferential(t *testing.T) {
	parallelSuite(t) // own browser and test hosts: runs beside the other heavy suites, to keep CI under 10 minutes
	needBrowser(t)
	node := needNode(t)
	srv := startDiffServer(t)
	direct := startChromium(t)

	launch := func(mutate func(*cdpguard.Config)) *cdpguard.Guard {
		cfg := guardConfig(t)
		// Allowed, but no name resolves in the test's network namespace.
		cfg.Allow = append(cfg.Allow, "nxdomain.invalid")
		cfg.DialogGrace = diffGrace
		if mutate != nil {
			mutate(&cfg)
		}
		return cdptest.StartGuard(t, cfg)
	}
	g := launch(nil)
	downloads := t.TempDir()
	gdl := launch(func(c *cdpguard.Config) { c.DownloadDir = downloads })

	// The two endpoints are driven at the same time, each by one client
	// after the other, one scenario after the other.
	var obsDirect, obsGuard, obsDL map[string]json.RawMessage
	collect := func(t *testing.T, url, only string) map[string]json.RawMessage {
		obs := runDiffNode(t, node, url, srv, only)
		if only == "" {
			maps.Copy(obs, chromedpScenarios(t, url, srv))
		} else {
			obs["chromedp/download"] = chromedpOne(t, url, func(tab context.Context) (any, error) { return chromedpDownload(t, tab, srv) })
		}
		return obs
	}
	t.Run("clients", func(t *testing.T) {
		runConcurrently(t, []string{"direct", "guard", "guard-download-dir"}, func(t *testing.T, name string) {
			switch name {
			case "direct":
				obsDirect = collect(t, direct.URL, "")
			case "guard":
				obsGuard = collect(t, g.URL(), "")
			default: // downloads with --download-dir, against the same direct observations
				obsDL = collect(t, gdl.URL(), "download")
			}
		})
	})
	if t.Failed() {
		return
	}
	compareObservations(t, "", obsDirect, obsGuard)
	checkRefusedNavigation(t, g)
	directDL := map[string]json.RawMessage{}
	for k := range obsDL {
		directDL[k] = obsDirect[k]
	}
	compareObservations(t, "download-dir:", directDL, obsDL)
	if n := srv.blockedHits.Load(); n == 0 {
		t.Errorf("control: the direct browser never reached blocked.test, so the blocked-host scenarios prove nothing")
	}
}

// unionKeys returns the keys of a and b, once each, sorted: the checks
// a direct and a guarded run observed between them.
func unionKeys[V any](a, b map[string]V) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// compareObservations fails for every difference not in allowedDiffs and
// for every entry of allowedDiffs (under prefix) that did not happen.
func compareObservations(t *testing.T, prefix string, direct, guard map[string]json.RawMessage) {
	t.Helper()
	for _, k := range unionKeys(direct, guard) {
		d, gd := canonical(direct[k]), canonical(guard[k])
		key := prefix + k
		allowed, ok := allowedDiffs[key]
		switch {
		case d == gd && !ok:
			t.Logf("same  %s: %s", key, d)
		case d == gd:
			t.Errorf("%s: allowedDiffs lists a difference (%s) but both observed %s: remove the entry", key, allowed.Why, d)
		case ok && allowed.Direct == d && allowed.Guard == gd:
			t.Logf("diff  %s (allowed: %s)", key, allowed.Why)
		default:
			t.Errorf("%s: the client observes something else through cdpguard\n direct: %s\n  guard: %s", key, d, gd)
		}
	}
}

// canonical re-encodes JSON with sorted keys; missing is "missing".
func canonical(raw json.RawMessage) string {
	if raw == nil {
		return "missing"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// mcpCLI returns the absolute path of @playwright/mcp's cli.js.
func mcpCLI(t *testing.T) string {
	abs, err := filepath.Abs(filepath.Join("node_modules", "@playwright", "mcp", "cli.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("@playwright/mcp missing (run `npm ci --ignore-scripts` in e2e/): %v", err)
	}
	return abs
}

// runDiffNode runs e2e/clients/differential.mjs against endpoint and returns its
// observations.
func runDiffNode(t *testing.T, node, endpoint string, srv *diffServer, only string) map[string]json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients/differential.mjs")
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(),
		"CDPGUARD_URL="+endpoint,
		"ALLOWED_URL="+srv.base()+"/page",
		"POPUP_URL="+srv.base()+"/popup",
		"FORBIDDEN_URL="+srv.blocked()+"/page",
		"STEP_TIMEOUT_MS=10000",
		"DIFF_BASE="+srv.base(),
		"DIFF_BLOCKED="+srv.blocked(),
		"DIFF_GRACE_MS="+strconv.FormatInt(diffGrace.Milliseconds(), 10),
		"DIFF_TMP="+t.TempDir(),
		"DIFF_ONLY="+only,
		"MCP_CLI="+mcpCLI(t),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res struct {
		Observations map[string]json.RawMessage `json:"observations"`
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil || res.Observations == nil {
		t.Fatalf("differential.mjs against %s: no result line (exit %v, parse %v)\nstdout:\n%s\nstderr:\n%s", endpoint, runErr, err, stdout.String(), stderr.String())
	}
	t.Logf("differential.mjs against %s:\n%s", endpoint, stderr.String())
	return res.Observations
}
