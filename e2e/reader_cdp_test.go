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

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
	"github.com/cdpguard/cdpguard/js"
)

// guardReadCmd is the guard's own CDP command, as a chromedp agent sends it.
var guardReadCmd = cdp.Command[map[string]any, cdpguard.ReadResult]{Method: "Guard.read"}

// guardRead sends Guard.read on the tab's page session, bounded.
func guardRead(tab context.Context, params map[string]any) (cdpguard.ReadResult, error) {
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	return chromedp.Call(ctx, guardReadCmd, params)
}

// readerCDP checks Guard.read as a chromedp agent uses it.
func readerCDP(t *testing.T, g *cdpguard.Guard, origin string, h *testhosts.Hosts) {
	tab := newTab(t, connect(t, g.URL()))

	t.Run("sections stitch", func(t *testing.T) {
		whole, err := guardRead(tab, map[string]any{"url": origin + "/fx/ietf-1/", "maxChars": 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if whole.NextOffset != nil || whole.TotalChars != len([]rune(whole.Text)) || whole.TotalChars < 31000 {
			t.Fatalf("whole read: nextOffset %v, totalChars %d, text %d chars", whole.NextOffset, whole.TotalChars, len([]rune(whole.Text)))
		}
		def, err := guardRead(tab, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len([]rune(def.Text)); def.NextOffset == nil || n > 30000 || n < 20000 || *def.NextOffset != n {
			t.Errorf("default section: %d chars, nextOffset %v (want ≤ 30000 and a next offset)", n, def.NextOffset)
		}
		var b strings.Builder
		offset, sections := 0, 0
		for ; sections < 100; sections++ {
			r, err := guardRead(tab, map[string]any{"offset": offset, "maxChars": 12000})
			if err != nil {
				t.Fatal(err)
			}
			if r.Offset != offset || r.TotalChars != whole.TotalChars {
				t.Fatalf("section at %d: offset %d, totalChars %d", offset, r.Offset, r.TotalChars)
			}
			b.WriteString(r.Text)
			if r.NextOffset == nil {
				break
			}
			offset = *r.NextOffset
		}
		if b.String() != whole.Text {
			t.Errorf("%d sections of ≤ 12000 chars do not stitch back to the whole text (%d vs %d chars)", sections+1, len(b.String()), len(whole.Text))
		}
		if _, err := guardRead(tab, map[string]any{"offset": whole.TotalChars + 1}); err == nil || !strings.Contains(err.Error(), "past the end") {
			t.Errorf("offset past the end: %v, want an error saying so", err)
		}
	})

	t.Run("links and chrome", func(t *testing.T) {
		r, err := guardRead(tab, map[string]any{"url": origin + "/links.html"})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Title: Links page\n", "URL: " + origin + "/links.html\n", "external link <http://example.org/ext?a=1>", "same host link", "# Links article", "- first item", "Name | Value"} {
			if !strings.Contains(r.Text, want) {
				t.Errorf("text lacks %q:\n%s", want, r.Text)
			}
		}
		for _, bad := range []string{"same host link <", "/other.html", "NAVMARKER", "FORMMARKER", "SELECTMARKER", "BUTTONMARKER", "search results"} {
			if strings.Contains(r.Text, bad) {
				t.Errorf("text holds %q:\n%s", bad, r.Text)
			}
		}
	})

	t.Run("search note", func(t *testing.T) {
		r, err := guardRead(tab, map[string]any{"url": origin + "/search/?q=x"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "Note: this is a search results page. Search results are not a source") {
			t.Errorf("no search note under --search-url:\n%s", r.Text)
		}
		if !strings.Contains(r.Text, "First result <http://example.org/a>") {
			t.Errorf("search page text lacks its results:\n%s", r.Text)
		}
	})

	t.Run("forbidden url refused", func(t *testing.T) {
		h.Forbidden.Reset()
		_, err := guardRead(tab, map[string]any{"url": h.Forbidden.Origin() + testhosts.HitPath("reader")})
		if err == nil {
			t.Fatal("Guard.read of a forbidden URL succeeded")
		}
		for _, want := range []string{testhosts.ForbiddenName, "Reachable origins: " + testhosts.AllowedName} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not name %q", err, want)
			}
		}
		// Control: an allowed read on the same tab still works.
		if r, err := guardRead(tab, map[string]any{"url": origin + "/links.html"}); err != nil || !strings.Contains(r.Text, "Links article") {
			t.Errorf("control read after the refusal: %v", err)
		}
		if n, c := h.Forbidden.Total(), h.Forbidden.Conns(); n != 0 || c != 0 {
			t.Errorf("forbidden listener saw %d requests, %d connections: %v", n, c, h.Forbidden.Log())
		}
	})

	t.Run("redirect to a forbidden host", func(t *testing.T) {
		h.Forbidden.Reset()
		target := h.Forbidden.Origin() + testhosts.HitPath("reader-redirect")
		r, err := guardRead(tab, map[string]any{"url": h.PageURL("/redirect?to=" + url.QueryEscape(target))})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range expectedExplanation() {
			if !strings.Contains(r.Text, want) {
				t.Errorf("the read of a redirect to a forbidden host is not the explanation page (lacks %q):\n%s", want, r.Text)
			}
		}
		if n, c := h.Forbidden.Total(), h.Forbidden.Conns(); n != 0 || c != 0 {
			t.Errorf("forbidden listener saw %d requests, %d connections", n, c)
		}
		if h.Allowed.Hits("/redirect") == 0 {
			t.Errorf("control: the allowed redirector was not reached")
		}
	})

	t.Run("browser session refused", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(tab, 10*time.Second)
		defer cancel()
		_, err := chromedp.CallBrowser(ctx, guardReadCmd, map[string]any{})
		if err == nil || !strings.Contains(err.Error(), "it works on a page session") {
			t.Errorf("Guard.read on the browser session: %v, want a refusal", err)
		}
	})

	t.Run("tampering page", func(t *testing.T) {
		r, err := guardRead(tab, map[string]any{"url": origin + "/tamper.html"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "ARTICLEMARKER is in the text") || !strings.Contains(r.Text, "Title: Tamper page") {
			t.Errorf("the reader lost the page's text:\n%s", r.Text)
		}
		if strings.Contains(r.Text, "STEERED") {
			t.Errorf("the page steered the reader:\n%s", r.Text)
		}
		// Control: the page's own world is tampered with.
		got, err := step(tab, 10*time.Second, chromedp.Evaluate[string](`document.title`))
		if err != nil || got != "STEEREDTEXT" {
			t.Errorf("control: the page's world was not tampered with (title %q, %v)", got, err)
		}
	})

	t.Run("huge page is cut", func(t *testing.T) {
		r, err := guardRead(tab, map[string]any{"url": origin + "/huge.html", "maxChars": 1000})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "Note: the page is larger than 4 million characters of HTML; only its first part was read.") || r.TotalChars > 4<<20 {
			t.Errorf("no truncation note, or %d chars:\n%s", r.TotalChars, r.Text)
		}
	})

	t.Run("never loads", func(t *testing.T) {
		start := time.Now()
		r, err := guardRead(tab, map[string]any{"url": origin + "/hang.html"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "Note: the page had not finished loading after 2s") || !strings.Contains(r.Text, "HANGMARKER") {
			t.Errorf("no load note or no text:\n%s", r.Text)
		}
		t.Logf("read of a page that never loads took %v (bound 2s)", time.Since(start).Round(time.Millisecond))
	})

	t.Run("script-rendered page settles", func(t *testing.T) {
		r, err := guardRead(tab, map[string]any{"url": origin + "/script.html"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "SCRIPTMARKER1") || !strings.Contains(r.Text, "SCRIPTMARKER2") || strings.Contains(r.Text, "Loading...") || strings.Contains(r.Text, "Note:") {
			t.Errorf("the read did not wait for the page to settle:\n%s", r.Text)
		}
	})

	t.Run("script-rendered page read right after its load", func(t *testing.T) {
		// The agent navigates and reads at the load event, with no url:
		// the read still waits for the page to settle.
		ctx, cancel := context.WithTimeout(tab, 10*time.Second)
		defer cancel()
		if _, err := chromedp.Run(ctx, chromedp.Navigate(origin+"/script.html")); err != nil {
			t.Fatal(err)
		}
		r, err := guardRead(tab, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "SCRIPTMARKER2") {
			t.Errorf("a read at the load event did not wait for the page to settle:\n%s", r.Text)
		}
	})

	t.Run("settle sees what can write a page", func(t *testing.T) {
		// js/settle.js in the real browser: links.html has nothing that can
		// write it after its load (the reader takes it at once); each
		// element or attribute below can, and makes it not inert, as does
		// a page larger than a look visits.
		ctx, cancel := context.WithTimeout(tab, 20*time.Second)
		defer cancel()
		for _, add := range []string{
			"",
			"document.body.append(document.createElement('script'))",
			"document.body.insertAdjacentHTML('beforeend', '<svg><script></script></svg>')",
			"document.body.setAttribute('onload', 'void 0')",
			"document.body.append(document.createElement('iframe'))",
			"document.body.append(document.createElement('object'))",
			"document.head.insertAdjacentHTML('beforeend', '<meta http-equiv=\"Refresh\" content=\"60\">')",
			// Not a writer: more elements and attributes than one look
			// visits (inertLimit, 20,000), which bounds the look.
			"for (let i = 0; i < 20001; i++) document.body.setAttribute('data-a' + i, '')",
		} {
			if _, err := chromedp.Run(ctx, chromedp.Navigate(origin+"/links.html")); err != nil {
				t.Fatal(err)
			}
			expr := "(() => { " + add + "; return (" + js.Settle + ")(1000, 200).inert; })()"
			inert, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
			if err != nil {
				t.Fatalf("%q: %v", add, err)
			}
			if want := add == ""; inert != want {
				t.Errorf("links.html after %q: inert %v, want %v", add, inert, want)
			}
		}
	})

	t.Run("lone surrogate reaches the agent", func(t *testing.T) {
		// Chrome writes a page's string cut inside an emoji as a lone
		// surrogate escape; the guard read the browser's JSON strictly and
		// dropped such a reply, so the agent's command was never answered.
		c := cdptest.DialUser(t, g.WebSocketURL(), "surrogate", cdptest.Options{})
		session := rawPage(t, c)
		cmd := `{"id":900200,"sessionId":"` + session + `","method":"Runtime.evaluate","params":{"expression":"'x\\ud800y'"}}`
		if err := c.WriteFrame(websocket.MessageText, []byte(cmd)); err != nil {
			t.Fatal(err)
		}
		for {
			m, ok := c.Next(15 * time.Second)
			if !ok {
				t.Fatal("no answer to an evaluate whose string holds a lone surrogate")
			}
			if raw := string(m.Raw); strings.Contains(raw, `"id":900200`) {
				if !strings.Contains(raw, `x\ud800y`) {
					t.Errorf("the answer: %s", raw)
				}
				return
			}
		}
	})

	t.Run("lone surrogate in the page's text is read", func(t *testing.T) {
		// The reader's look at the page comes back through V8, which writes
		// a string cut inside an emoji as a lone surrogate escape; read
		// strictly, the whole read failed.
		ctx, cancel := context.WithTimeout(tab, 20*time.Second)
		defer cancel()
		if _, err := chromedp.Run(ctx, chromedp.Navigate(origin+"/links.html")); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelector('p').textContent = 'SURROGATEMARKER cut inside an emoji \ud83d here'; 1`)); err != nil {
			t.Fatal(err)
		}
		r, err := guardRead(tab, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "SURROGATEMARKER") {
			t.Errorf("the read lacks the paragraph:\n%s", r.Text)
		}
	})

	t.Run("empty page note", func(t *testing.T) {
		r, err := guardRead(tab, map[string]any{"url": origin + "/empty.html"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "Note: the page shows little text") || !strings.Contains(r.Text, "browser_wait_for") {
			t.Errorf("no note suggesting to wait for a text:\n%s", r.Text)
		}
	})

	t.Run("getPolicy", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(tab, 10*time.Second)
		defer cancel()
		p, err := chromedp.Call(ctx, cdp.Command[cdp.Empty, map[string]any]{Method: "Guard.getPolicy"}, cdp.Empty{})
		if err != nil || p["instructions"] != instructionsMarker || p["searchUrl"] != origin+"/search" {
			t.Errorf("Guard.getPolicy = %v, %v; want the instructions and the search URL", p, err)
		}
	})

	t.Run("no search note elsewhere", func(t *testing.T) {
		r, err := guardRead(tab, map[string]any{"url": origin + "/links.html"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Text, "Note:") {
			t.Errorf("a note on a page outside --search-url:\n%s", r.Text)
		}
	})
}

// readerHTTP checks GET /read.
func readerHTTP(t *testing.T, g *cdpguard.Guard, origin string, h *testhosts.Hosts) {
	get := func(target string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, g.URL()+"/read?url="+url.QueryEscape(target), nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		c := &http.Client{Timeout: 30 * time.Second}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	user := map[string]string{"X-LibreChat-User": "reader-http"}
	if code, body := httpDo(t, http.MethodGet, g.URL()+"/policy", ""); code != http.StatusOK || !strings.Contains(body, `"instructions":"`+instructionsMarker+`"`) || !strings.Contains(body, `"searchUrl":"`+origin+`/search"`) {
		t.Errorf("GET /policy: %d %s; want the instructions and the search URL", code, body)
	}
	code, body := get(origin+"/links.html", user)
	var r cdpguard.ReadResult
	if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil || !strings.Contains(r.Text, "external link <http://example.org/ext?a=1>") {
		t.Errorf("GET /read: %d %s", code, body)
	}
	h.Forbidden.Reset()
	code, body = get(h.Forbidden.Origin()+testhosts.HitPath("reader-http"), user)
	if code != http.StatusForbidden || !strings.Contains(body, testhosts.ForbiddenName) || !strings.Contains(body, "Reachable origins: "+testhosts.AllowedName) {
		t.Errorf("GET /read of a forbidden URL: %d %s", code, body)
	}
	if n, c := h.Forbidden.Total(), h.Forbidden.Conns(); n != 0 || c != 0 {
		t.Errorf("forbidden listener saw %d requests, %d connections", n, c)
	}
	if code, body := get(origin+"/links.html", map[string]string{"Sec-Fetch-Site": "cross-site"}); code != http.StatusForbidden {
		t.Errorf("GET /read from a web page: %d %s, want 403", code, body)
	}
	// The reader tab is the user's: it shows in that user's /json/list only.
	if _, urls, _ := getList(t, g.URL(), "reader-http"); !containsURL(urls, origin+"/links.html") {
		t.Errorf("reader tab not in the user's /json/list: %v", urls)
	}
	if _, urls, _ := getList(t, g.URL(), "someone-else"); containsURL(urls, origin+"/links.html") {
		t.Errorf("another user sees the reader tab: %v", urls)
	}
}

func containsURL(urls []string, u string) bool {
	for _, x := range urls {
		if x == u {
			return true
		}
	}
	return false
}
