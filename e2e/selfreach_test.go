package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// selfAddr is a second address of the test's host (on lo, in the test's
// own network namespace): not loopback to netip, so before #20 the guard
// did not count it as itself.
const selfAddr = "10.203.0.7"

// routedAddr is local to the test's host by a route (`ip route add local`)
// and on no interface: the self-address set cannot know it, so only the
// endpoint's refusal of the egress proxy's own connections stands.
const routedAddr = "10.204.0.9"

// TestSelfReach (#20 items 2 and 4) runs one guard listening on 0.0.0.0
// with selfAddr on its allowlist (an IP entry, which also lets the egress
// proxy dial it) and checks:
//   - page: a hostile page served from selfAddr aims fetch, <iframe> and
//     <img> at the guard's /json/version, /json/list, /policy, /metrics,
//     /json/close/<victim>, /json/activate/<victim> and /json/new on
//     selfAddr: no response comes back from the guard, and the fallback
//     user's tab stays open; the same vectors reach a control server on
//     selfAddr (another port), so the address is allowed and the vectors
//     work.
//   - mcp: an MCP user's browser_navigate and browser_read of those URLs
//     are tool errors; of the control server's, they work.
//   - stream: a plain-http page that sends 2 kB and stays open shows its
//     first part within 5 s, through the egress proxy, and browser_read
//     reads it as it is after the read timeout (README's promise).
func TestSelfReach(t *testing.T) {
	parallelSuite(t)
	needBrowser(t)
	if directMode() {
		t.Skip("the self-address rules are the guard's")
	}
	if !privateNetns() {
		if strict() {
			t.Fatal("CDPGUARD_E2E=1: TestSelfReach adds an address and must run in a private network namespace (unshare --net)")
		}
		t.Skip("not in a private network namespace: will not add an address to this host")
	}
	if out, err := exec.Command("ip", "addr", "add", selfAddr+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add %s: %v %s", selfAddr, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", selfAddr+"/32", "dev", "lo").Run() })
	if out, err := exec.Command("ip", "route", "add", "local", routedAddr+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip route add local %s: %v %s", routedAddr, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "route", "del", "local", routedAddr+"/32", "dev", "lo").Run() })

	ctl := startControl(t)
	str := startStreamer(t)
	cfg := guardConfig(t)
	cfg.Listen = "0.0.0.0:0"
	cfg.Allow = append(cfg.Allow, selfAddr, routedAddr)
	cfg.ReadLoadTimeout = 2 * time.Second
	g := cdptest.StartGuard(t, cfg)
	u, err := url.Parse(g.URL())
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	base := "http://127.0.0.1:" + port
	guardOnAddr := "http://" + selfAddr + ":" + port
	// The guard does answer on selfAddr (the hole needs it).
	cdptest.WaitHTTP(t, guardOnAddr+"/healthz", "ok", 5*time.Second)

	victim := cdptest.Connect(t, base, "") // the fallback user, as in the red-team report
	victimTarget, _ := victim.OpenPage(t, str.url("/plain"))
	// One agent page and one MCP session serve every subtest: a user's
	// first connection costs a browser context and a proxy listener.
	c := cdptest.Connect(t, base, "selfreach-mallory")
	_, s := c.OpenPage(t, "")
	m := mcpConnect(t, base, "selfreach-mcp")

	if _, err := c.CallWithin(s, "Network.enable", nil, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	t.Run("page", func(t *testing.T) {
		q := url.Values{"guard": {guardOnAddr}, "control": {ctl.base}, "victim": {victimTarget}}
		c.Navigate(t, s, ctl.base+"/attack.html?"+q.Encode())
		if _, err := c.Eval(s, `new Promise((res) => { const t0 = Date.now(); const poll = () => (window.__done || Date.now() - t0 > 15000) ? res(!!window.__done) : setTimeout(poll, 50); poll(); })`); err != nil {
			t.Fatal(err)
		}
		out, err := c.Eval(s, `JSON.stringify({done: !!window.__done, results: window.__results})`)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Done    bool              `json:"done"`
			Results map[string]string `json:"results"`
		}
		var raw string
		if err := json.Unmarshal([]byte(out), &raw); err != nil || json.Unmarshal([]byte(raw), &res) != nil || !res.Done {
			t.Fatalf("attack page did not finish: %s", out)
		}
		for k, v := range res.Results {
			want := "failed"
			if strings.HasPrefix(k, "control ") {
				want = "ok"
			}
			if v != want {
				t.Errorf("%s: %s, want %s", k, v, want)
			}
		}
		for _, e := range c.Events() {
			if e.Method != "Network.responseReceived" {
				continue
			}
			var p struct {
				Response struct {
					URL    string `json:"url"`
					Status int    `json:"status"`
				} `json:"response"`
			}
			_ = jsonv2.Unmarshal(e.Params, &p)
			if strings.HasPrefix(p.Response.URL, guardOnAddr) {
				t.Errorf("the guard answered the page: %d %s", p.Response.Status, p.Response.URL)
			}
		}
		// Control: each vector reached the other port of selfAddr.
		for _, p := range []string{"/json/version", "/json/list", "/policy", "/metrics", "/json/close/" + victimTarget} {
			for _, via := range []string{"fetch", "img", "iframe"} {
				if ctl.count(p, via) == 0 {
					t.Errorf("control: %s by %s never arrived: the vectors prove nothing", p, via)
				}
			}
		}
	})

	t.Run("localRoute", func(t *testing.T) {
		routed := "http://" + routedAddr + ":" + port
		seen := len(c.Events())
		q := url.Values{"guard": {routed}, "control": {ctl.base}, "victim": {victimTarget}}
		c.Navigate(t, s, ctl.base+"/attack.html?"+q.Encode())
		if _, err := c.Eval(s, `new Promise((res) => { const t0 = Date.now(); const poll = () => (window.__done || Date.now() - t0 > 15000) ? res(!!window.__done) : setTimeout(poll, 50); poll(); })`); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range c.Events()[seen:] {
			if e.Method != "Network.responseReceived" {
				continue
			}
			var p struct {
				Response struct {
					URL     string            `json:"url"`
					Status  int               `json:"status"`
					Headers map[string]string `json:"headers"`
				} `json:"response"`
			}
			_ = jsonv2.Unmarshal(e.Params, &p)
			if !strings.HasPrefix(p.Response.URL, routed) {
				continue
			}
			n++
			if p.Response.Status != http.StatusForbidden {
				t.Errorf("the guard answered the page through a local route: %d %s", p.Response.Status, p.Response.URL)
			}
			// The proxy's own refusals carry a CSP; the endpoint's do not:
			// the request went through the proxy and the endpoint refused it.
			for k := range p.Response.Headers {
				if strings.EqualFold(k, "Content-Security-Policy") {
					t.Errorf("%s refused by the proxy, not the endpoint: the route test proves nothing", p.Response.URL)
				}
			}
		}
		if n == 0 {
			t.Fatal("no response from the routed address: the vectors prove nothing")
		}
	})

	t.Run("mcp", func(t *testing.T) {
		for _, p := range []string{"/json/version", "/json/list", "/policy", "/metrics", "/json/close/" + victimTarget} {
			msg := call(t, m, "browser_navigate", map[string]any{"url": guardOnAddr + p}, true)
			mustContain(t, "browser_navigate "+p, msg, "own endpoint")
			msg = call(t, m, "browser_read", map[string]any{"url": guardOnAddr + p}, true)
			mustContain(t, "browser_read "+p, msg, "own endpoint")
		}
		call(t, m, "browser_navigate", map[string]any{"url": ctl.base + "/json/list"}, false)
		mustContain(t, "control read", call(t, m, "browser_read", nil, false), "control /json/list")
	})

	t.Run("stream", func(t *testing.T) {
		start := time.Now()
		if _, err := c.CallWithin(s, "Page.navigate", map[string]any{"url": str.url("/stream/1")}, 5*time.Second); err != nil {
			t.Fatalf("navigate to a page that has sent 2 kB: %v", err)
		}
		if _, err := c.Eval(s, `new Promise((res, rej) => { const t0 = Date.now(); const poll = () => (document.body && document.body.innerText.includes('FIRST-PART')) ? res(true) : (Date.now() - t0 > 5000 ? rej(new Error('first part not shown')) : setTimeout(poll, 25)); poll(); })`); err != nil {
			t.Fatalf("the first part was not shown within 5 s: %v", err)
		}
		t.Logf("first part shown after %v (the response stays open)", time.Since(start).Round(time.Millisecond))
		str.release("/stream/1")

		start = time.Now()
		text := call(t, m, "browser_read", map[string]any{"url": str.url("/stream/2")}, false)
		mustContain(t, "browser_read of an open stream", text, "FIRST-PART")
		t.Logf("browser_read of an open stream answered after %v (read timeout 2 s)", time.Since(start).Round(time.Millisecond))
		str.release("/stream/2")
	})

	ids, err := victim.CallWithin("", "Target.getTargets", nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ids), victimTarget) {
		t.Errorf("the fallback user's tab %s was closed: %s", victimTarget, ids)
	}
}

// control is a server on selfAddr (another port than the guard's): it
// serves the attack page and counts every other request by path and vector.
type control struct {
	base string
	mu   sync.Mutex
	hits map[string]int // "path via" → count
}

func startControl(t *testing.T) *control {
	t.Helper()
	ln, err := net.Listen("tcp", selfAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	c := &control{base: "http://" + ln.Addr().String(), hits: map[string]int{}}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/attack.html" {
			http.ServeFile(w, r, "testdata/selfreach/attack.html")
			return
		}
		via := r.URL.Query().Get("via")
		if via == "" {
			via = "fetch"
			if r.Header.Get("Sec-Fetch-Dest") == "document" || r.Header.Get("Upgrade-Insecure-Requests") == "1" {
				via = "navigate"
			}
		}
		c.mu.Lock()
		c.hits[r.URL.Path+" "+via]++
		c.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "control %s\n", r.URL.Path)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return c
}

func (c *control) count(path, via string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits[path+" "+via]
}

// streamer serves, by the allowed test name, /plain (a small page) and
// /stream/<n>: 2 kB of HTML with FIRST-PART in it, then nothing until the
// test releases that path (or ends), then the rest: a response that would
// end 15 s later, ended as soon as the test has seen its first part.
type streamer struct {
	base string
	mu   sync.Mutex
	rel  map[string]chan struct{}
	done chan struct{}
}

func startStreamer(t *testing.T) *streamer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &streamer{base: "http://" + testhosts.AllowedName + ":" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port),
		rel: map[string]chan struct{}{}, done: make(chan struct{})}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if !strings.HasPrefix(r.URL.Path, "/stream/") {
			_, _ = io.WriteString(w, "<!doctype html><title>plain</title><p>a plain page</p>")
			return
		}
		head := "<!doctype html><title>stream</title><p>FIRST-PART of a streamed page.</p><p>"
		_, _ = io.WriteString(w, head+strings.Repeat("x", 2048-len(head))+"</p>\n")
		http.NewResponseController(w).Flush()
		select {
		case <-s.ch(r.URL.Path):
		case <-s.done:
		case <-time.After(15 * time.Second):
		case <-r.Context().Done():
		}
		_, _ = io.WriteString(w, "<p>the rest</p>")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		close(s.done)
		_ = srv.Close()
	})
	return s
}

func (s *streamer) url(path string) string { return s.base + path }

func (s *streamer) ch(path string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.rel[path]
	if !ok {
		c = make(chan struct{})
		s.rel[path] = c
	}
	return c
}

func (s *streamer) release(path string) {
	c := s.ch(path)
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}
