package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
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

	h.Forbidden.Reset()
	// Barrier: every poll fetches the forbidden host, then the sink, so
	// attachPolls sink hits after ready prove as many forbidden attempts
	// had their chance (about 1.5 s of polling every 100 ms).
	const attachPolls = 15
	sinkBefore := h.Sink.Hits(path)
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	err := h.Sink.WaitHits(wctx, path, sinkBefore+attachPolls+1)
	if s := h.Forbidden.Snapshot(); s.Total > 0 || s.Conns > 0 {
		t.Errorf("LEAK: %d requests and %d new connections reached the forbidden host in the %d polls after the guard was ready: %v", s.Total, s.Conns, attachPolls, h.Forbidden.Log())
	}
	if err != nil {
		t.Errorf("the pre-existing page stopped polling the allowed sink after attach (tab closed or frozen?), so zero forbidden hits proves nothing: %v", err)
	} else {
		t.Logf("pre-existing page kept running: %d sink hits", h.Sink.Hits(path)-sinkBefore)
	}

	t.Run("playwright", func(t *testing.T) { runNodeClient(t, "playwright.mjs", endpointURL, h, "attach-playwright") })
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
