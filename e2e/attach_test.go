package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestAttach starts a browser that already polls the forbidden host, shows
// the polls arrive, attaches the guard and checks that none arrives once the
// guard reports ready, while the page keeps running. Then an agent uses the
// attached guard with Playwright.
func TestAttach(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	h := testhosts.Start(t)
	c := startChromium(t)

	const name = "attach-poll"
	path := testhosts.HitPath(name)
	poll := h.VectorURL("poll", h.Forbidden.Origin(), name) + "&" + url.Values{"sink": {h.Sink.Origin()}}.Encode()
	openTabHTTP(t, c.URL, poll)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Forbidden.WaitHits(ctx, path, 3); err != nil {
		t.Fatalf("control: the polling page does not reach the forbidden host before attach: %v", err)
	}

	endpointURL := c.URL
	if !directMode() {
		actx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		g, err := cdpguard.Attach(actx, c.URL, guardConfig(t))
		if err != nil {
			t.Fatalf("cdpguard.Attach: %v", err)
		}
		cdptest.CloseOnCleanup(t, g)
		cdptest.WaitHTTP(t, g.URL()+"/readyz", "ok", 30*time.Second)
		endpointURL = g.URL()
	}

	// Requests the page started before the guard was ready may still be
	// on their way (loaded machine): Chrome takes the intercepting loaders
	// to the renderer on its own time, and a request already made goes on.
	// The page is told, through the browser's own endpoint, to mark the
	// requests it starts from now on (-after): those must never reach the
	// forbidden host. attachPolls marked sink hits prove as many marked
	// forbidden attempts had their chance (polling every 100 ms).
	markAfter(t, c.URL, "/vector/poll.html")
	const attachPolls = 15
	after := testhosts.HitPath(name + "-after")
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	err := h.Sink.WaitHits(wctx, after, attachPolls+1)
	if n := h.Forbidden.Hits(after); n > 0 {
		t.Errorf("LEAK: %d requests the page started after the guard was ready reached the forbidden host: %v", n, h.Forbidden.Log())
	}
	if err != nil {
		t.Errorf("the pre-existing page stopped polling the allowed sink after attach (tab closed or frozen?), so zero forbidden hits proves nothing: %v", err)
	} else {
		t.Logf("pre-existing page kept running: %d marked sink hits; %d unmarked forbidden hits in all (started before the mark)", h.Sink.Hits(after), h.Forbidden.Hits(path))
	}
	if s := h.Forbidden.Snapshot(); s.Total != h.Forbidden.Hits(path)+h.Forbidden.Hits(after) {
		t.Errorf("the forbidden host saw requests other than the poll's: %v", h.Forbidden.Log())
	}

	t.Run("playwright", func(t *testing.T) { runNodeClient(t, "playwright.mjs", endpointURL, h, "attach-playwright") })
}

// markAfter sets window.__phase = "-after" in the tab whose URL has
// pathPart (the one poll page of this browser), through the
// browser's own endpoint base (the test's control channel, not the guard):
// the poll page marks every request it starts from then on.
func markAfter(t *testing.T, base, pathPart string) {
	t.Helper()
	c := cdptest.Connect(t, base, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Call(ctx, "", "Target.getTargets", nil)
	if err != nil {
		t.Fatalf("getTargets: %v", err)
	}
	var r struct {
		TargetInfos []struct {
			TargetID string `json:"targetId"`
			URL      string `json:"url"`
		} `json:"targetInfos"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	for _, ti := range r.TargetInfos {
		if !strings.Contains(ti.URL, pathPart) {
			continue
		}
		res, err := c.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": ti.TargetID, "flatten": true})
		if err != nil {
			t.Fatalf("attach to the poll page: %v", err)
		}
		var a struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(res, &a); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(ctx, a.SessionID, "Runtime.evaluate", map[string]any{"expression": `window.__phase = "-after"`}); err != nil {
			t.Fatalf("mark the poll page: %v", err)
		}
		return
	}
	t.Fatalf("no tab at %s among %+v", pathPart, r.TargetInfos)
}

// openTabHTTP opens u in a new tab through the browser's own /json/new.
func openTabHTTP(t *testing.T, base, u string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/json/new?"+url.QueryEscape(u), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("open tab: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("open tab: %s %s", resp.Status, b)
	}
}
