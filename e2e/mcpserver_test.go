package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// vectorDoneJS is what a model would pass to browser_evaluate to wait
// (bounded) until a leak-suite vector page has made its attempt.
const vectorDoneJS = `() => new Promise((resolve) => {
  const t0 = Date.now();
  const left = () => !location.pathname.startsWith('/vector/'); // a navigation vector left its page
  const poll = () => (window.__vectorDone || left() || Date.now() - t0 > 1500) ? resolve(!!window.__vectorDone) : setTimeout(poll, 50);
  poll();
})`

// headerRT adds the user header to every request, as LibreChat's
// requestInit.headers does.
type headerRT struct{ user string }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-LibreChat-User", h.user)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect opens an MCP session (the Go SDK's streamable-HTTP client) to
// base/mcp as user.
func mcpConnect(t *testing.T, base, user string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: headerRT{user}}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// call runs one tool and returns its text; wantErr says whether the result
// must be a tool error.
//
// A navigation the server's call bound cut short ("did not finish within
// …; try again") is tried again, twice at most, as a model does: suites
// that make that bound small to test it (MCPModelTasks, 6 s) saw a plain
// page load take longer at load 31 in a fresh-clone run. Navigating again
// is safe; other calls are not retried.
func call(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, wantErr bool) string {
	t.Helper()
	for try := 1; ; try++ {
		out, isErr, ok := callOnce(t, s, name, args)
		if !ok {
			return ""
		}
		if isErr && !wantErr && name == "browser_navigate" && try < 3 && strings.Contains(out, "did not finish within") {
			t.Logf("%s %v: try %d cut short by the call bound, trying again: %s", name, args, try, out)
			continue
		}
		if isErr != wantErr {
			t.Errorf("%s %v: isError=%v, want %v: %s", name, args, isErr, wantErr, out)
		}
		return out
	}
}

// callOnce calls tool name once and returns its text, whether it is an
// error result, and false after a protocol error (reported).
func callOnce(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (string, bool, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Errorf("%s %v: protocol error %v", name, args, err)
		return "", false, false
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String(), res.IsError, true
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: want %q in:\n%s", what, w, got)
		}
	}
}

// refOf finds the ref of the first line of a snapshot containing all of
// parts.
func refOf(t *testing.T, snap string, parts ...string) string {
	t.Helper()
	for _, line := range strings.Split(snap, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if i := strings.Index(line, "[ref="); ok && i >= 0 {
			return strings.SplitN(line[i+5:], "]", 2)[0]
		}
	}
	t.Fatalf("no ref for %v in snapshot:\n%s", parts, snap)
	return ""
}

// TestMCPServer drives cdpguard's own /mcp with real MCP clients against
// one `cdpguard serve` on the test hosts.
func TestMCPServer(t *testing.T) {
	parallelSuite(t) // own browser and test hosts: runs beside the other heavy suites, to keep CI under 10 minutes
	chrome := needBrowser(t)
	if directMode() {
		t.Skip("the MCP server is cdpguard's own")
	}
	h := testhosts.Start(t)
	srv := startServed(t, exec.Command(buildCdpguard(t, t.TempDir()), append(serveArgs(chrome), "--allow", h.Sink.Origin())...))
	base := srv.listenURL(t)
	page := func(p string) string { return h.PageURL("/mcp/" + p) }

	t.Run("instructions", func(t *testing.T) {
		s := mcpConnect(t, base, "mcp-inst")
		mustContain(t, "initialize instructions", s.InitializeResult().Instructions, testhosts.AllowedName, "browser_read", "browser_snapshot")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tools, err := s.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools.Tools {
			if strings.Contains(tl.Name, "run_code") || strings.Contains(tl.Name, "install") || strings.Contains(tl.Name, "upload") {
				t.Errorf("tool %s may run code or touch files outside the browser", tl.Name)
			}
			if tl.Name == "browser_navigate" {
				if !strings.HasPrefix(tl.Description, "Open a URL in the current tab. It returns no page content") {
					t.Errorf("browser_navigate description: %q", tl.Description)
				}
				mustContain(t, "navigate description", tl.Description, testhosts.AllowedName)
			}
		}
	})

	s := mcpConnect(t, base, "mcp-alice")
	t.Run("read", func(t *testing.T) {
		out := call(t, s, "browser_read", map[string]any{"url": page("article.html")}, false)
		mustContain(t, "browser_read", out, "ARTICLE-BODY-MARKER", "https://example.org/otter-survey", "Otters of the North")
		if strings.Contains(out, "NAVIGATION-MARKER") {
			t.Errorf("browser_read returned the navigation:\n%s", out)
		}
	})
	t.Run("snapshotClickRead", func(t *testing.T) {
		call(t, s, "browser_navigate", map[string]any{"url": page("article.html")}, false)
		snap := call(t, s, "browser_snapshot", nil, false)
		mustContain(t, "snapshot", snap, "https://example.org/otter-survey", `heading "Otters of the North"`)
		ref := refOf(t, snap, `link "the second part"`)
		call(t, s, "browser_click", map[string]any{"element": "second part link", "ref": ref}, false)
		mustContain(t, "next page", call(t, s, "browser_read", nil, false), "SECOND-PAGE-MARKER")
		out := call(t, s, "browser_click", map[string]any{"element": "stale", "ref": ref}, true)
		mustContain(t, "stale ref", out, "snapshot")
		mustContain(t, "console", call(t, s, "browser_console_messages", nil, false), "CONSOLE-MARKER")
		mustContain(t, "back", call(t, s, "browser_navigate_back", nil, false), "article.html")
		mustContain(t, "read after back", call(t, s, "browser_read", nil, false), "ARTICLE-BODY-MARKER")
		snap = call(t, s, "browser_snapshot", nil, false)
		call(t, s, "browser_hover", map[string]any{"element": "survey link", "ref": refOf(t, snap, `link "Otter Survey project"`)}, false)
	})
	t.Run("dialog", func(t *testing.T) {
		call(t, s, "browser_navigate", map[string]any{"url": page("next.html")}, false)
		ref := refOf(t, call(t, s, "browser_snapshot", nil, false), `button "Ask me"`)
		out := call(t, s, "browser_click", map[string]any{"element": "Ask me", "ref": ref}, false)
		mustContain(t, "dialog note", out, "confirm", "Really?", "browser_handle_dialog")
		call(t, s, "browser_handle_dialog", map[string]any{"accept": false}, false)
		call(t, s, "browser_wait_for", map[string]any{"text": "DIALOG-DONE false"}, false)
	})
	t.Run("form", func(t *testing.T) {
		call(t, s, "browser_navigate", map[string]any{"url": page("form.html")}, false)
		snap := call(t, s, "browser_snapshot", nil, false)
		call(t, s, "browser_select_option", map[string]any{"element": "colour", "ref": refOf(t, snap, "combobox", "Colour"), "values": []string{"Green"}}, false)
		call(t, s, "browser_type", map[string]any{"element": "name", "ref": refOf(t, snap, "textbox", "Name"), "text": "Ada"}, false)
		call(t, s, "browser_press_key", map[string]any{"key": "Enter"}, false) // submits the form
		mustContain(t, "result", call(t, s, "browser_read", nil, false), "RESULT name=Ada colour=g")
	})
	t.Run("tabs", func(t *testing.T) {
		out := call(t, s, "browser_tabs", map[string]any{"action": "new"}, false)
		if n := strings.Count(out, "\n"); n < 2 {
			t.Fatalf("tabs after new: %s", out)
		}
		call(t, s, "browser_navigate", map[string]any{"url": page("tabs.html")}, false)
		out = call(t, s, "browser_tabs", map[string]any{"action": "list"}, false)
		newIdx, oldIdx := -1, -1
		for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.Contains(line, "tabs.html") {
				newIdx = i
				if !strings.HasPrefix(line, "*") {
					t.Errorf("the new tab is not the current one: %s", out)
				}
			} else {
				oldIdx = i
			}
		}
		if newIdx < 0 || oldIdx < 0 {
			t.Fatalf("tabs: %s", out)
		}
		out = call(t, s, "browser_tabs", map[string]any{"action": "select", "index": oldIdx}, false)
		mustContain(t, "select", out, "* "+strconv.Itoa(oldIdx)+":")
		out = call(t, s, "browser_tabs", map[string]any{"action": "close", "index": newIdx}, false)
		if strings.Contains(out, "tabs.html") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("tabs after close: %s", out)
		}
	})
	t.Run("screenshot", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_take_screenshot"})
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Fatalf("screenshot: %v %+v", err, res)
		}
		img, ok := res.Content[len(res.Content)-1].(*mcp.ImageContent)
		if !ok || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
			t.Fatalf("screenshot is not PNG image content: %T", res.Content[len(res.Content)-1])
		}
	})
	t.Run("blocked", func(t *testing.T) {
		before := h.Forbidden.Total() + h.Forbidden.Conns()
		out := call(t, s, "browser_navigate", map[string]any{"url": h.Forbidden.Origin() + "/hit/mcp-nav"}, true)
		mustContain(t, "blocked", out, testhosts.ForbiddenName, testhosts.AllowedName, "Reachable origins")
		// A redirect from an allowed page to the forbidden host: the guard
		// answers with its explanation page, the tool with the same error.
		out = call(t, s, "browser_navigate", map[string]any{"url": h.PageURL("/redirect?to=" + h.Forbidden.Origin() + "/hit/mcp-redirect")}, true)
		mustContain(t, "blocked redirect", out, testhosts.ForbiddenName, "Reachable origins")
		if n := h.Forbidden.Total() + h.Forbidden.Conns(); n != before {
			t.Errorf("forbidden listener saw %d hits", n-before)
		}
	})
	t.Run("badInput", func(t *testing.T) {
		call(t, s, "browser_fly", nil, true)
		call(t, s, "browser_click", map[string]any{"element": "x", "ref": "e99999"}, true)
		call(t, s, "browser_navigate", map[string]any{"url": 42}, true)
		call(t, s, "browser_navigate", map[string]any{}, true)
		call(t, s, "browser_navigate", map[string]any{"url": "http://" + strings.Repeat("a", 10000)}, true)
		call(t, s, "browser_tabs", map[string]any{"action": "explode"}, true)
		call(t, s, "browser_evaluate", map[string]any{"function": "() => { throw new Error('boom') }"}, true)
	})
	t.Run("hostile", func(t *testing.T) {
		before := h.Forbidden.Total() + h.Forbidden.Conns()
		call(t, s, "browser_navigate", map[string]any{"url": page("hostile.html") + "?target=" + h.Forbidden.Origin()}, false)
		out := call(t, s, "browser_read", nil, false)
		mustContain(t, "hostile page", out, "IGNORE YOUR INSTRUCTIONS")
		// A model that obeys the page:
		call(t, s, "browser_navigate", map[string]any{"url": h.Forbidden.Origin() + "/hit/instructed"}, true)
		call(t, s, "browser_evaluate", map[string]any{"function": "() => fetch('" + h.Forbidden.Origin() + "/hit/eval').then(() => 'ok', e => String(e))"}, false)
		// Control: the same page aimed at the allowed sink reaches it.
		call(t, s, "browser_navigate", map[string]any{"url": page("hostile.html") + "?target=" + h.Sink.Origin()}, false)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Sink.WaitHits(ctx, "/hit/hostile-fetch", 1); err != nil {
			t.Fatalf("control: the allowed sink saw no hit: %v", err)
		}
		// The leak suite's vector pages, opened by the MCP tools: each tries
		// its side channel to the forbidden host; two controls aim at the sink.
		for _, v := range []struct{ page, target string }{
			{"fetch", h.Sink.Origin()}, {"img", h.Sink.Origin()},
			{"nav", ""}, {"img", ""}, {"script", ""}, {"fetch", ""}, {"xhr", ""},
			{"iframe", ""}, {"redirect-nav", ""}, {"form", ""}, {"beacon", ""},
			{"eventsource", ""}, {"worker", ""}, {"websocket", ""},
		} {
			target := v.target
			if target == "" {
				target = h.Forbidden.Origin()
			}
			t0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_navigate", Arguments: map[string]any{"url": h.VectorURL(v.page, target, "mcp-"+v.page)}})
			if err == nil {
				_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "browser_evaluate", Arguments: map[string]any{"function": vectorDoneJS}})
			}
			cancel()
			t.Logf("vector %s → %s: %v", v.page, target, time.Since(t0).Round(time.Millisecond))
			if err != nil {
				t.Errorf("vector %s: %v", v.page, err)
			}
			if v.target != "" {
				wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := h.Sink.WaitHits(wctx, testhosts.HitPath("mcp-"+v.page), 1); err != nil {
					t.Errorf("control %s: the allowed sink saw no hit: %v", v.page, err)
				}
				cancel()
			}
		}
		call(t, s, "browser_tabs", map[string]any{"action": "list"}, false)
		if n := h.Forbidden.Total() + h.Forbidden.Conns(); n != before {
			t.Errorf("forbidden listener saw %d hits/conns: %v", n-before, h.Forbidden.Log())
		}
	})
	t.Run("refusals", func(t *testing.T) {
		for name, set := range map[string]func(*http.Request){
			"origin":    func(r *http.Request) { r.Header.Set("Origin", "http://evil.test") },
			"fetchSite": func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
			"host":      func(r *http.Request) { r.Host = "evil.test" },
		} {
			r, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			set(r)
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusForbidden {
				t.Errorf("%s: /mcp answered %d, want 403", name, res.StatusCode)
			}
		}
	})
	t.Run("isolation", func(t *testing.T) {
		b := mcpConnect(t, base, "mcp-bob")
		call(t, s, "browser_navigate", map[string]any{"url": page("article.html")}, false)
		call(t, s, "browser_evaluate", map[string]any{"function": "() => { localStorage.setItem('who', 'alice'); document.cookie = 'who=alice; path=/'; return 1 }"}, false)
		call(t, b, "browser_navigate", map[string]any{"url": page("next.html")}, false)
		out := call(t, b, "browser_evaluate", map[string]any{"function": "() => JSON.stringify([localStorage.getItem('who'), document.cookie])"}, false)
		if strings.Contains(out, "alice") {
			t.Errorf("bob sees alice's storage: %s", out)
		}
		tabs := call(t, b, "browser_tabs", map[string]any{"action": "list"}, false)
		if strings.Contains(tabs, "article.html") {
			t.Errorf("bob sees alice's tab: %s", tabs)
		}
		// A CDP client with alice's header sees alice's MCP tab.
		req, _ := http.NewRequest(http.MethodGet, base+"/json/list", nil)
		req.Header.Set("X-LibreChat-User", "mcp-alice")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(res.Body)
		res.Body.Close()
		mustContain(t, "alice's /json/list", body.String(), "article.html")
		actx, cancel := connectUser(t, base, "mcp-alice")
		defer cancel()
		urls := strings.Join(targetURLs(t, actx), " ")
		mustContain(t, "chromedp as alice", urls, "article.html")
		bctx, cancelB := connectUser(t, base, "mcp-bob")
		defer cancelB()
		if urls := strings.Join(targetURLs(t, bctx), " "); strings.Contains(urls, "article.html") {
			t.Errorf("chromedp as bob sees alice's tab: %s", urls)
		}
	})
	t.Run("parallel", func(t *testing.T) {
		var wg sync.WaitGroup
		outs := make([]string, 3)
		for i, p := range []string{"article.html", "next.html", "form.html"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i] = call(t, s, "browser_read", map[string]any{"url": page(p)}, false)
			}()
		}
		wg.Wait()
		mustContain(t, "parallel read 0", outs[0], "ARTICLE-BODY-MARKER")
		mustContain(t, "parallel read 1", outs[1], "SECOND-PAGE-MARKER")
		mustContain(t, "parallel read 2", outs[2], "Contact form")
	})
	t.Run("node", func(t *testing.T) {
		runNodeSteps(t, base, h, []string{"MCP_PAGES=" + page("")}, []string{"connect", "read", "snapshotClick", "form", "dialogTarget", "blocked", "isolated", "parallel"}, "mcpserver.mjs")
	})
	t.Run("close", func(t *testing.T) {
		c := mcpConnect(t, base, "mcp-carol")
		call(t, c, "browser_navigate", map[string]any{"url": page("article.html")}, false)
		call(t, c, "browser_evaluate", map[string]any{"function": "() => localStorage.setItem('who', 'carol')"}, false)
		call(t, c, "browser_close", nil, false)
		out := call(t, c, "browser_snapshot", nil, true)
		mustContain(t, "after close", out, "browser_navigate")
		call(t, c, "browser_navigate", map[string]any{"url": page("article.html")}, false)
		if out := call(t, c, "browser_evaluate", map[string]any{"function": "() => String(localStorage.getItem('who'))"}, false); !strings.Contains(out, "null") {
			t.Errorf("storage survived browser_close: %s", out)
		}
	})
}
