package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// pptr23Differences is the table of allowed differences of
// TestPuppeteer23Core, kept beside its documentation
// (docs/conformance/puppeteer-23-core.md) so that one place says why.
const pptr23Differences = "../docs/conformance/puppeteer-23-core.json"

// pptr23SecondName is the second allowed site of TestPuppeteer23Core: an
// iframe from it is cross-site to allowed.test's page.
const pptr23SecondName = "second.test"

// pptr23Checks are the checks e2e/clients/puppeteer23.mjs runs, in order;
// every one must report in both modes.
var pptr23Checks = []string{
	"connect", "sessions-same-ids-in-flight", "in-flight-when-target-closes",
	"new-session-after-close", "goto-refused-port", "status-text-reason",
	"status-text-no-reason", "goto-invalid-url", "oopif-frame-evaluate",
	"dialog-alert-accepted", "interception-continue-abort",
	"wait-for-selector-delayed", "browser-context-create-dispose",
}

// pptr23Outcome is what one check of puppeteer23.mjs reported.
type pptr23Outcome struct {
	OK       bool            `json:"ok"`
	Error    *string         `json:"error"`
	Observed json.RawMessage `json:"observed"`
}

// pptr23Report is a check's line of puppeteer23.mjs's result: its
// outcome and how long it took (MS, logged, never compared).
type pptr23Report struct {
	pptr23Outcome
	MS int `json:"ms"`
}

// pptr23Difference is one allowed difference: the check's outcome direct
// and through the guard, as canonical JSON, and why it differs.
type pptr23Difference struct {
	Check  string          `json:"check"`
	Direct json.RawMessage `json:"direct"`
	Guard  json.RawMessage `json:"guard"`
	Why    string          `json:"why"`
}

// TestPuppeteer23Core runs the behaviours issue 33 found broken for
// Puppeteer 23.3.0 (the last release that numbers each CDPSession's ids
// from 1) with that release, against a plain Chromium and through the
// guard at once, and compares each check's outcome (pass or fail, the
// error's first 160 characters, what it observed): a difference fails
// unless docs/conformance/puppeteer-23-core.json lists it with its reason,
// and so does a listed difference that is gone. The checks: three
// sessions of one page with the same ids in flight at once; an evaluate
// in flight when its page closes rejects with Puppeteer's
// TargetCloseError, then new sessions work; goto a closed port rejects
// with net::ERR_CONNECTION_REFUSED; statusText of "200 cool!" and of a
// status line without a reason; goto an invalid URL; an iframe from a
// second allowed site; an alert accepted; request interception's continue
// and abort; waitForSelector after a delayed insert; a browser context
// created and closed. The forbidden host sees no hit.
func TestPuppeteer23Core(t *testing.T) {
	parallelSuite(t) // own browser, guard and test hosts
	needBrowser(t)
	node := needNode(t)
	if _, err := os.Stat(filepath.Join("node_modules", "puppeteer-core-23", "package.json")); err != nil {
		if strict() {
			t.Fatalf("CDPGUARD_E2E=1: e2e/node_modules/puppeteer-core-23 missing (run `npm ci --ignore-scripts` in e2e/): %v", err)
		}
		t.Skipf("skipping: e2e/node_modules/puppeteer-core-23 missing: %v", err)
	}
	allowed := readPptr23Differences(t)
	h := testhosts.Start(t)
	env := []string{
		"ALLOWED_URL=" + h.PageURL("/page.html"),
		"POPUP_URL=" + h.PageURL("/popup.html"),
		"FORBIDDEN_URL=" + h.Forbidden.Origin() + testhosts.HitPath("pptr23"),
		"SECOND_URL=http://" + pptr23SecondName + ":" + strconv.Itoa(h.Allowed.Port) + "/popup.html",
		"HIT_URL=" + h.PageURL("/hit/"),
		"REFUSED_URL=http://" + testhosts.AllowedName + ":" + strconv.Itoa(closedPort(t)) + "/",
		"COOL_URL=http://" + testhosts.AllowedName + ":" + strconv.Itoa(rawHTTPServer(t, "HTTP/1.1 200 cool!")) + "/cool",
		"NO_REASON_URL=http://" + testhosts.AllowedName + ":" + strconv.Itoa(rawHTTPServer(t, "HTTP/1.1 200")) + "/none",
		"STEP_TIMEOUT_MS=15000",
	}
	cfg := guardConfig(t)
	cfg.Allow = append(cfg.Allow, pptr23SecondName)

	// Each mode starts its browser and runs the client beside the other.
	var direct, guarded map[string]pptr23Outcome
	runConcurrently(t, []string{"direct", "guard"}, func(t *testing.T, mode string) {
		if mode == "direct" {
			direct = runPptr23(t, node, startChromium(t).URL, env)
		} else {
			guarded = runPptr23(t, node, cdptest.StartGuard(t, cfg).URL(), env)
		}
	})
	if t.Failed() {
		return
	}
	comparePptr23(t, direct, guarded, allowed)
	if n := h.Forbidden.Total(); n != 0 {
		t.Errorf("the forbidden host saw %d hits: %v", n, h.Forbidden.Log())
	}
}

// runPptr23 runs clients/puppeteer23.mjs against endpoint and returns its
// outcomes by check.
func runPptr23(t *testing.T, node, endpoint string, env []string) map[string]pptr23Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients/puppeteer23.mjs")
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(append(os.Environ(), "CDPGUARD_URL="+endpoint), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var res struct {
		Checks map[string]pptr23Report `json:"checks"`
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	if err := json.Unmarshal(lines[len(lines)-1], &res); err != nil || res.Checks == nil {
		t.Fatalf("puppeteer23.mjs against %s: no result line (exit %v, parse %v)\nstdout:\n%s\nstderr:\n%s", endpoint, runErr, err, stdout.String(), stderr.String())
	}
	for _, name := range pptr23Checks {
		if _, ok := res.Checks[name]; !ok {
			t.Errorf("puppeteer23.mjs against %s: check %s did not run (exit %v)\nstderr:\n%s", endpoint, name, runErr, stderr.String())
		}
	}
	out := map[string]pptr23Outcome{}
	var took strings.Builder
	for _, name := range pptr23Checks {
		if r, ok := res.Checks[name]; ok {
			fmt.Fprintf(&took, " %s %d ms;", name, r.MS)
		}
	}
	for name, r := range res.Checks {
		out[name] = r.pptr23Outcome
	}
	t.Logf("puppeteer23.mjs against %s: exit %v;%s\n%s", endpoint, runErr, took.String(), stderr.String())
	return out
}

// comparePptr23 fails for every check whose outcome differs direct and
// through the guard unless allowed lists that very difference, and for
// every entry of allowed that did not happen.
func comparePptr23(t *testing.T, direct, guard map[string]pptr23Outcome, allowed map[string]pptr23Difference) {
	t.Helper()
	for _, name := range unionKeys(direct, guard) {
		d, gd := pptr23Canonical(direct, name), pptr23Canonical(guard, name)
		entry, listed := allowed[name]
		switch {
		case d == gd && !listed:
			t.Logf("same  %s: %s", name, d)
		case d == gd:
			t.Errorf("%s: %s lists a difference (%s) but both observed %s: remove the entry", name, pptr23Differences, entry.Why, d)
		case listed && canonical(entry.Direct) == d && canonical(entry.Guard) == gd:
			t.Logf("diff  %s (allowed: %s)", name, entry.Why)
		default:
			t.Errorf("%s: Puppeteer 23 sees something else through cdpguard\n direct: %s\n  guard: %s", name, d, gd)
		}
	}
}

// pptr23Canonical is the outcome of check name as canonical JSON
// ("missing" when the check did not report).
func pptr23Canonical(outcomes map[string]pptr23Outcome, name string) string {
	o, ok := outcomes[name]
	if !ok {
		return "missing"
	}
	b, err := json.Marshal(o)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return canonical(b)
}

// readPptr23Differences reads the table of allowed differences.
func readPptr23Differences(t *testing.T) map[string]pptr23Difference {
	t.Helper()
	b, err := os.ReadFile(pptr23Differences)
	if err != nil {
		t.Fatalf("read the allowed differences: %v", err)
	}
	var list struct {
		Differences []pptr23Difference `json:"differences"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("parse %s: %v", pptr23Differences, err)
	}
	out := map[string]pptr23Difference{}
	for _, d := range list.Differences {
		if d.Why == "" || !slices.Contains(pptr23Checks, d.Check) {
			t.Fatalf("%s: entry %q has no reason or names no check of puppeteer23.mjs", pptr23Differences, d.Check)
		}
		out[d.Check] = d
	}
	return out
}
