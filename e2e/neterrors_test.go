package e2e

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// chromeAnswers is what one endpoint (the guard, or Chromium direct)
// answered in TestChromeAnswers.
type chromeAnswers struct {
	refusedNav      string // Page.navigate's errorText for a closed port
	refusedFetch    string // a no-cors fetch() to it: "resolved" or "rejected:<name>"
	refusedSocket   string // a WebSocket to it: "open" or "failed"
	coolStatus      string // Network.Response.statusText of "HTTP/1.1 200 cool!"
	noReasonStatus  string // ... of "HTTP/1.1 200" with no reason
	invalidNavCode  int    // the CDP error of Page.navigate {url:"asdfasdf"}
	invalidNavError string
	// refusedTLSNav is Page.navigate's errorText for https:// to the closed
	// port: behind any HTTP proxy Chrome reports a failed CONNECT as
	// net::ERR_TUNNEL_CONNECTION_FAILED, whatever the proxy answers; it is
	// measured, and compared apart.
	refusedTLSNav string
}

// TestChromeAnswers: through the guard, Chrome's answers to what the
// network and Chrome itself refuse are the answers it gives direct
// (issue 33): a closed port on an allowed host is net::ERR_CONNECTION_REFUSED
// for a navigation, a rejected fetch() and a failed WebSocket, not the egress
// proxy's 502 page; a reason phrase reaches Network.Response.statusText as
// the server wrote it; a URL without a scheme is Chrome's CDP error "Cannot
// navigate to invalid URL". The forbidden host sees no hit.
func TestChromeAnswers(t *testing.T) {
	needBrowser(t)
	h := testhosts.Start(t)
	closed := closedPort(t)
	cool := rawHTTPServer(t, "HTTP/1.1 200 cool!")
	noReason := rawHTTPServer(t, "HTTP/1.1 200")

	g := cdptest.StartGuard(t, guardConfig(t))
	guarded := chromeAnswersOf(t, g.URL(), h, closed, cool, noReason)
	direct := chromeAnswersOf(t, startChromium(t).URL, h, closed, cool, noReason)
	t.Logf("guard: %+v", guarded)
	t.Logf("direct: %+v", direct)
	if guarded.refusedTLSNav != "net::ERR_TUNNEL_CONNECTION_FAILED" || direct.refusedTLSNav != "net::ERR_CONNECTION_REFUSED" {
		t.Errorf("https:// to a closed port: %q through the guard, %q direct; want net::ERR_TUNNEL_CONNECTION_FAILED and net::ERR_CONNECTION_REFUSED (README, Differences from direct Chrome)", guarded.refusedTLSNav, direct.refusedTLSNav)
	}
	guarded.refusedTLSNav, direct.refusedTLSNav = "", ""

	if direct.refusedNav != "net::ERR_CONNECTION_REFUSED" {
		t.Errorf("direct Chrome's errorText for a closed port is %q; the test expects net::ERR_CONNECTION_REFUSED", direct.refusedNav)
	}
	if guarded != direct {
		t.Errorf("through the guard %+v, direct %+v: want the same", guarded, direct)
	}
	if guarded.refusedFetch == "resolved" || guarded.refusedSocket == "open" {
		t.Errorf("a fetch() or WebSocket to a closed port did not fail through the guard: %+v", guarded)
	}
	if guarded.coolStatus != "cool!" || guarded.noReasonStatus != "" {
		t.Errorf("statusText through the guard %q and %q, want %q and %q", guarded.coolStatus, guarded.noReasonStatus, "cool!", "")
	}
	if guarded.invalidNavCode != -32000 || guarded.invalidNavError != "Cannot navigate to invalid URL" {
		t.Errorf("Page.navigate asdfasdf through the guard: %d %q, want -32000 %q", guarded.invalidNavCode, guarded.invalidNavError, "Cannot navigate to invalid URL")
	}
	if n := h.Forbidden.Total(); n != 0 {
		t.Errorf("the forbidden host saw %d hits", n)
	}
}

// chromeAnswersOf runs the checks of TestChromeAnswers on the browser at
// base.
func chromeAnswersOf(t *testing.T, base string, h *testhosts.Hosts, closed, cool, noReason int) chromeAnswers {
	t.Helper()
	var a chromeAnswers
	c := cdptest.Connect(t, base, "net-errors")
	_, session := c.OpenPage(t, h.PageURL("/page.html"))
	if _, err := c.CallWithin(session, "Network.enable", nil, 10*time.Second); err != nil {
		t.Fatalf("Network.enable: %v", err)
	}
	closedOrigin := "allowed.test:" + strconv.Itoa(closed)

	res, err := c.CallWithin(session, "Page.navigate", map[string]any{"url": "http://" + closedOrigin + "/"}, 30*time.Second)
	if err != nil {
		t.Fatalf("Page.navigate to a closed port: %v", err)
	}
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	_ = jsonv2.Unmarshal(res, &nav)
	a.refusedNav = nav.ErrorText
	res, err = c.CallWithin(session, "Page.navigate", map[string]any{"url": "https://" + closedOrigin + "/"}, 30*time.Second)
	if err != nil {
		t.Fatalf("Page.navigate to a closed port over https: %v", err)
	}
	nav.ErrorText = ""
	_ = jsonv2.Unmarshal(res, &nav)
	a.refusedTLSNav = nav.ErrorText

	c.Navigate(t, session, h.PageURL("/page.html"))
	a.refusedFetch = evalText(t, c, session, `fetch('http://`+closedOrigin+`/x', {mode: 'no-cors'}).then(() => 'resolved', e => 'rejected:' + e.name)`)
	a.refusedSocket = evalText(t, c, session, `new Promise(r => { const w = new WebSocket('ws://`+closedOrigin+`/'); w.onopen = () => r('open'); w.onerror = () => r('failed'); w.onclose = () => r('failed'); })`)

	a.coolStatus = statusTextOf(t, c, session, "http://allowed.test:"+strconv.Itoa(cool)+"/cool")
	a.noReasonStatus = statusTextOf(t, c, session, "http://allowed.test:"+strconv.Itoa(noReason)+"/none")

	_, err = c.CallWithin(session, "Page.navigate", map[string]any{"url": "asdfasdf"}, 10*time.Second)
	var cdpErr *cdptest.Error
	if errors.As(err, &cdpErr) {
		a.invalidNavCode, a.invalidNavError = cdpErr.Code, cdpErr.Message
	} else {
		t.Errorf("Page.navigate asdfasdf on %s: %v, want a CDP error", base, err)
	}
	return a
}

// evalText evaluates expr on session, awaiting its promise, and returns
// the string it gave.
func evalText(t *testing.T, c *cdptest.Client, session, expr string) string {
	t.Helper()
	v, err := c.Eval(session, expr)
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	var s string
	if err := jsonv2.Unmarshal([]byte(v), &s); err != nil {
		t.Fatalf("evaluate %s: %s is not a string", expr, v)
	}
	return s
}

// statusTextOf navigates session to u and returns the statusText of u's
// Network.responseReceived.
func statusTextOf(t *testing.T, c *cdptest.Client, session, u string) string {
	t.Helper()
	c.Navigate(t, session, u)
	var statusText string
	_, ok := c.WaitEvent(15*time.Second, func(m cdptest.Message) bool {
		if m.SessionID != session || m.Method != "Network.responseReceived" {
			return false
		}
		var p struct {
			Response struct {
				URL        string `json:"url"`
				StatusText string `json:"statusText"`
			} `json:"response"`
		}
		if jsonv2.Unmarshal(m.Params, &p) != nil || p.Response.URL != u {
			return false
		}
		statusText = p.Response.StatusText
		return true
	})
	if !ok {
		t.Fatalf("no Network.responseReceived for %s within 15s", u)
	}
	return statusText
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// rawHTTPServer serves a small HTML page on loopback under the status
// line given, written byte for byte (Go's server writes only standard
// reason phrases). It stops when t ends.
func rawHTTPServer(t *testing.T, statusLine string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const body = "<!doctype html><title>status</title><p>status line test</p>"
	response := statusLine + "\r\nContent-Type: text/html\r\nCache-Control: no-store\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	wg.Add(1)
	go func() { // the accept loop: ends when the listener closes
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() { // one connection: ends when it closes
				defer wg.Done()
				defer func() { mu.Lock(); delete(open, c); mu.Unlock(); _ = c.Close() }()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					if _, err := io.WriteString(c, response); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for c := range open {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr).Port
}
