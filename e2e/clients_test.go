package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// expectedExplanation are the strings the explanation page of a blocked
// navigation to evil.test must contain: the reachable origin, the blocked
// host and the operator's instructions.
func expectedExplanation() []string {
	return []string{testhosts.AllowedName, testhosts.ForbiddenName, instructionsMarker}
}

// clientResult is the JSON line a client script prints.
type clientResult struct {
	Client string `json:"client"`
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	Steps  []struct {
		Name   string          `json:"name"`
		OK     bool            `json:"ok"`
		MS     int             `json:"ms"`
		Error  string          `json:"error"`
		Detail json.RawMessage `json:"detail"`
	} `json:"steps"`
}

// clientSteps are the steps every client flow reports, in order.
var clientSteps = []string{"connect", "newPage", "gotoAllowed", "evaluate", "screenshot", "popup", "explanationPage", "close"}

// runNodeClient runs e2e/clients/<script> against endpoint and reports each step
// as a subtest, so a failure names the step.
func runNodeClient(t *testing.T, script, endpoint string, h *testhosts.Hosts, name string) {
	t.Helper()
	node := needNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients/"+script)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(),
		"CDPGUARD_URL="+endpoint,
		"ALLOWED_URL="+h.PageURL("/page.html"),
		"POPUP_URL="+h.PageURL("/popup.html"),
		"FORBIDDEN_URL="+h.Forbidden.Origin()+testhosts.HitPath(name),
		"EXPECT_TEXT="+strings.Join(expectedExplanation(), ","),
		"STEP_TIMEOUT_MS="+strconv.Itoa(15000),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	res, err := lastJSONLine(stdout.String())
	if err != nil {
		t.Fatalf("node %s: %v (exit: %v)\nstdout:\n%s\nstderr:\n%s", script, err, runErr, stdout.String(), stderr.String())
	}
	checkSteps(t, script, res, clientSteps, runErr, stderr.String())
}

// checkSteps reports each step a node client ran as a subtest, so a failure
// names the step, and fails when a wanted step did not run or the client's
// own verdict disagrees with its exit status.
func checkSteps(t *testing.T, script string, res clientResult, want []string, runErr error, stderr string) {
	t.Helper()
	got := map[string]bool{}
	for _, s := range res.Steps {
		got[s.Name] = true
		t.Run(s.Name, func(t *testing.T) {
			if !s.OK {
				t.Errorf("%s step %s failed after %d ms: %s", res.Client, s.Name, s.MS, s.Error)
			} else {
				t.Logf("ok in %d ms: %s", s.MS, s.Detail)
			}
		})
	}
	for _, s := range want {
		if !got[s] {
			t.Errorf("%s: step %s did not run (error %q, stderr %s)", script, s, res.Error, stderr)
		}
	}
	if res.OK != (runErr == nil) {
		t.Errorf("%s: result ok=%v but exit %v; stderr: %s", script, res.OK, runErr, stderr)
	}
}

func lastJSONLine(out string) (clientResult, error) {
	var res clientResult
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "{") {
			if err := json.Unmarshal([]byte(l), &res); err != nil {
				return res, fmt.Errorf("parse result line: %w", err)
			}
			return res, nil
		}
	}
	return res, fmt.Errorf("no JSON result line")
}

// TestClients runs the agent flow with Playwright, Puppeteer and chromedp
// through one endpoint.
func TestClients(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	h := testhosts.Start(t)
	// rec records every browser-session method each client sends: none may
	// be refused by the browser-level allowlist.
	var rec *methodRecorder
	url := ""
	if directMode() {
		url = endpoint(t)
	} else {
		url = userGuard(t, func(c *cdpguard.Config) {
			rec = newMethodRecorder(c.Logger)
			c.Logger = rec.logger()
		}).URL()
	}
	check := func(t *testing.T, client string) {
		if rec != nil {
			rec.check(t, client)
		}
	}
	t.Run("playwright", func(t *testing.T) {
		runNodeClient(t, "playwright.mjs", url, h, "client-playwright")
		check(t, "playwright")
	})
	t.Run("puppeteer", func(t *testing.T) {
		runNodeClient(t, "puppeteer.mjs", url, h, "client-puppeteer")
		check(t, "puppeteer")
	})
	t.Run("chromedp", func(t *testing.T) {
		chromedpFlow(t, url, h, "client-chromedp")
		check(t, "chromedp")
	})
	if n := h.Forbidden.Total(); n > 0 {
		t.Errorf("forbidden host was reached %d times by the client flows: %v", n, h.Forbidden.Log())
	}
}

// chromedpFlow is the client flow of the Node scripts, with chromedp.
func chromedpFlow(t *testing.T, url string, h *testhosts.Hosts, name string) {
	bctx := connect(t, url)
	tab, cancel := openClientTab(t, bctx) // chromedp as it comes: every domain it enables
	t.Cleanup(func() { closeTab(t, cancel) })
	t.Run("gotoAllowed", func(t *testing.T) {
		if _, err := step(tab, 15*time.Second, chromedp.Navigate(h.PageURL("/page.html"))); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("evaluate", func(t *testing.T) {
		got, err := step(tab, 10*time.Second, chromedp.Evaluate[string](`document.getElementById("marker").textContent`))
		if err != nil || got != "allowed-page-marker" {
			t.Errorf("marker = %q, %v", got, err)
		}
	})
	t.Run("screenshot", func(t *testing.T) {
		buf, err := step(tab, 15*time.Second, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(buf, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("screenshot is not a PNG (%d bytes)", len(buf))
		}
	})
	t.Run("popup", func(t *testing.T) {
		wctx, cancel := context.WithTimeout(tab, 15*time.Second)
		defer cancel()
		ch := chromedp.WaitNewTarget(wctx, func(info *target.Info) bool { return strings.Contains(info.URL, "/popup.html") })
		if _, err := evalBool(tab, 10*time.Second, `window.open("/popup.html"), true`, withGesture); err != nil {
			t.Fatal(err)
		}
		var id target.ID
		select {
		case id = <-ch:
		case <-wctx.Done():
		}
		if id == "" {
			// Say whether the popup exists, so a failure tells a missing
			// popup from a WaitNewTarget that never fired.
			lctx, cancel := context.WithTimeout(tab, 5*time.Second)
			defer cancel()
			infos, err := chromedp.Targets(lctx)
			var seen []string
			for _, in := range infos {
				seen = append(seen, fmt.Sprintf("%s %s opener=%q attached=%v", in.Type, in.URL, in.OpenerID, in.Attached))
			}
			t.Fatalf("chromedp.WaitNewTarget saw no popup within 15s; targets now (err %v): %q", err, seen)
		}
		popup, cancelPopup := chromedp.NewContext(tab, chromedp.WithTargetID(id))
		defer cancelPopup()
		if err := pollTrue(popup, 10*time.Second, `document.getElementById("marker") !== null && document.getElementById("marker").textContent === "popup-page-marker"`); err != nil {
			t.Error(err)
		}
	})
	t.Run("explanationPage", func(t *testing.T) {
		forbidden := h.Forbidden.Origin() + testhosts.HitPath(name)
		if _, err := step(tab, 15*time.Second, chromedp.Navigate(forbidden)); err != nil {
			t.Fatalf("navigate to %s: %v (expected a 403 explanation page)", forbidden, err)
		}
		text, err := step(tab, 10*time.Second, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range expectedExplanation() {
			if !strings.Contains(text, want) {
				t.Errorf("explanation page lacks %q; text: %.500q", want, text)
			}
		}
	})
}
