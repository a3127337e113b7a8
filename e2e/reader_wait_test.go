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
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// waitArticle is the article the reader's wait pages (e2e/testhosts/pages/
// reader/) write by script; each page puts its own marker before every
// paragraph.
var waitArticle = []string{
	"River otters live along rivers, lakes and marshes, where they hunt fish, crayfish and frogs in the shallow water near the banks, mostly at dusk and at night.",
	"They dig their dens into the banks or take over the burrows of beavers and muskrats, and a den often has an entrance under the water and another hidden in the reeds.",
	"A family of otters stays together for about a year; the young learn to swim in their second month and follow their mother on her hunts until the next spring.",
	"Otters keep warm in cold water with the densest fur of any animal, up to a hundred thousand hairs on a square centimetre, and groom it for hours every day.",
	"Where rivers were cleaned of their poisons in the last decades of the century, otters came back on their own, and surveys now find their tracks in most counties.",
	"Counting them is hard: surveyors look for their droppings on stones and bridges, which otters leave as signs to each other, and count the places, not the animals.",
}

// waitPages are the pages of issue 34 and the paragraphs each must be read
// with: the article written 800 ms after the load, the article written in
// steps, and an article beside a clock that ticks every 100 ms (the page
// never settles; the read ends at the settle bound).
var waitPages = []struct {
	path    string
	markers []string
}{
	{"/reader/late.html", []string{"LATE-ONE", "LATE-TWO", "LATE-THREE"}},
	{"/reader/steps.html", []string{"STEP-ONE", "STEP-TWO", "STEP-THREE", "STEP-FOUR", "STEP-FIVE", "STEP-SIX"}},
	{"/reader/clock.html", []string{"CLOCK-ONE", "CLOCK-TWO", "CLOCK-THREE"}},
}

// wholeArticle fails t unless text holds every paragraph of the page with
// markers, whole, and not the page's placeholder.
func wholeArticle(t *testing.T, how, text string, markers []string) {
	t.Helper()
	for i, m := range markers {
		if p := m + " " + waitArticle[i]; !strings.Contains(text, p) {
			t.Errorf("%s: paragraph %q missing:\n%s", how, p, text)
		}
	}
	if strings.Contains(text, "Loading...") || strings.Contains(text, "shows little text") {
		t.Errorf("%s: read before the page's scripts wrote it:\n%s", how, text)
	}
}

// readerWaits reads the pages of issue 34 (a page whose scripts write it
// after its load, with no request in between) through Guard.read, GET
// /read and MCP browser_read: each returns the whole article. The reads'
// bounds (30 s for Guard.read and GET /read, 40 s for a tool call) are
// hang guards; the wait itself is bounded by the guard's settle bound.
func readerWaits(t *testing.T, g *cdpguard.Guard, h *testhosts.Hosts) {
	tab := newTab(t, connect(t, g.URL()))
	s := mcpConnect(t, g.URL(), "reader-wait-mcp")
	for _, p := range waitPages {
		u := h.PageURL(p.path)
		t.Run(p.path, func(t *testing.T) {
			start := time.Now()
			r, err := guardRead(tab, map[string]any{"url": u})
			if err != nil {
				t.Fatal(err)
			}
			wholeArticle(t, "Guard.read", r.Text, p.markers)
			mark := time.Now()
			wholeArticle(t, "GET /read", getRead(t, g, u).Text, p.markers)
			mark2 := time.Now()
			wholeArticle(t, "browser_read", call(t, s, "browser_read", map[string]any{"url": u}, false), p.markers)
			t.Logf("Guard.read %v, GET /read %v, browser_read %v (settle bound 3 s after the load)",
				mark.Sub(start).Round(time.Millisecond), mark2.Sub(mark).Round(time.Millisecond), time.Since(mark2).Round(time.Millisecond))
		})
	}
}

// getRead reads u with GET /read as the user reader-wait-http, bounded at
// 30 s (a hang guard).
func getRead(t *testing.T, g *cdpguard.Guard, u string) cdpguard.ReadResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.URL()+"/read?url="+url.QueryEscape(u), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(userHeader, "reader-wait-http")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /read: %v", err)
	}
	defer resp.Body.Close()
	var res cdpguard.ReadResult
	if b, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(b, &res) != nil {
		t.Fatalf("GET /read: %d %s %v", resp.StatusCode, b, err)
	}
	return res
}
