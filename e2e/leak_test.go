package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// vector is one way a page or an agent can make the browser send a request.
type vector struct {
	// name names the subtest and the hit path.
	name string
	// page is the vector page under /vector/ on the allowed host; "" means
	// the agent itself navigates to the target (Page.navigate).
	page string
	// click makes the test click #go with a user gesture (popups).
	click bool
	// connOnly vectors make no HTTP request; the control waits for a TCP
	// connection to the sink instead of a hit.
	connOnly bool
	// forbidden and control return the target origin of the leak run and
	// of the control run.
	forbidden, control func(h *testhosts.Hosts) string
}

func evilOrigin(h *testhosts.Hosts) string { return h.Forbidden.Origin() }
func sinkOrigin(h *testhosts.Hosts) string { return h.Sink.Origin() }

// origin builds http://HOST:PORT for the host-spelling tricks.
func origin(host string, port int) string { return "http://" + host + ":" + strconv.Itoa(port) }

// plain is a vector aimed at evil.test (leak run) and at the sink (control).
func plain(name, page string) vector {
	return vector{name: name, page: page, forbidden: evilOrigin, control: sinkOrigin}
}

// trick returns the host-spelling vectors (IP literal, userinfo, trailing
// dot, upper case) for one vector page.
func trick(page string) []vector {
	sfx := page
	if sfx == "" {
		sfx = "agent-nav"
	}
	vs := []vector{
		{name: "ip-literal-" + sfx, page: page,
			forbidden: func(h *testhosts.Hosts) string { return h.Forbidden.IPOrigin() },
			control:   sinkOrigin},
		{name: "trailing-dot-" + sfx, page: page,
			forbidden: func(h *testhosts.Hosts) string { return origin("evil.test.", h.Forbidden.Port) },
			control:   func(h *testhosts.Hosts) string { return origin("allowed.test.", h.Sink.Port) }},
		{name: "upper-case-" + sfx, page: page,
			forbidden: func(h *testhosts.Hosts) string { return origin("EVIL.TEST", h.Forbidden.Port) },
			control:   func(h *testhosts.Hosts) string { return origin("ALLOWED.TEST", h.Sink.Port) }},
	}
	if page != "img" {
		// Chrome itself refuses subresource URLs with credentials, so the
		// userinfo trick is a navigation vector only.
		vs = append(vs, vector{name: "userinfo-" + sfx, page: page,
			forbidden: func(h *testhosts.Hosts) string { return origin("allowed.test@evil.test", h.Forbidden.Port) },
			control:   func(h *testhosts.Hosts) string { return origin("evil.test@allowed.test", h.Sink.Port) }})
	}
	return vs
}

// leakVectors are the vectors the Fetch layer must close (no egress outside the allowlist: README "Security model").
func leakVectors() []vector {
	vs := []vector{
		plain("agent-nav", ""),
		plain("nav", "nav"),
		plain("img", "img"),
		plain("script", "script"),
		plain("css", "css"),
		plain("font", "font"),
		plain("fetch", "fetch"),
		plain("xhr", "xhr"),
		plain("iframe", "iframe"),
		{name: "popup", page: "popup", click: true, forbidden: evilOrigin, control: sinkOrigin},
		plain("redirect-nav", "redirect-nav"),
		plain("redirect-img", "redirect-img"),
		plain("form-post", "form"),
		plain("beacon", "beacon"),
		plain("eventsource", "eventsource"),
		plain("worker-fetch", "worker"),
	}
	vs = append(vs, trick("")...)
	vs = append(vs, trick("nav")...)
	return append(vs, trick("img")...)
}

// TestLeaks runs every vector twice on one shared endpoint: aimed at the
// allowed sink (control: the request must arrive, so the vector works) and
// aimed at the forbidden host (no request and no TCP connection may arrive).
func TestLeaks(t *testing.T) {
	parallelSuite(t) // own browser and test hosts: runs beside the other heavy suites, to keep CI under 10 minutes
	needBrowser(t)
	h := testhosts.Start(t)
	bctx := connect(t, endpointFromFile(t)) // the policy from a file (--policy-file); the other suites use the flags
	runVectors(t, h, bctx, leakVectors())
}

// TestEgressProxyVectors covers what only the egress proxy layer closes:
// Fetch never pauses WebSocket handshakes or preconnects. Through the
// guard's proxy Chrome 156 preconnects to the proxy only and never sends a
// CONNECT, for allowed hosts too, so the preconnect control runs in an
// unguarded Chromium. sidechannel_test.go has the other side channels.
func TestEgressProxyVectors(t *testing.T) {
	parallelSuite(t) // own guard, browser and test hosts: overlaps the other suites' waits (CI wall time)
	needBrowser(t)
	h := testhosts.Start(t)
	bctx := connect(t, endpoint(t))
	runVectors(t, h, bctx, []vector{
		plain("websocket", "websocket"),
		{name: "websocket-ip-literal", page: "websocket",
			forbidden: func(h *testhosts.Hosts) string { return h.Forbidden.IPOrigin() }, control: sinkOrigin},
	})
	pre := vector{name: "preconnect", page: "preconnect", connOnly: true, forbidden: evilOrigin, control: sinkOrigin}
	ctl := bctx
	if !directMode() {
		ctl = connect(t, startChromium(t).URL)
	}
	t.Run("preconnect", func(t *testing.T) {
		t.Run("control-unguarded", func(t *testing.T) { runControl(t, h, newTabPool(t, ctl), pre) })
		t.Run("forbidden", func(t *testing.T) { runForbidden(t, h, bctx, newTabPool(t, bctx), pre) })
	})
}

func runVectors(t *testing.T, h *testhosts.Hosts, bctx context.Context, vs []vector) {
	seen := 0 // forbidden requests attributed to a subtest
	tabs := newTabPool(t, bctx)
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			t.Run("control", func(t *testing.T) { runControl(t, h, tabs, v) })
			t.Run("forbidden", func(t *testing.T) { seen += runForbidden(t, h, bctx, tabs, v) })
		})
	}
	if late := h.Forbidden.Total() - seen; late > 0 {
		t.Errorf("forbidden host saw %d requests that arrived after their subtest ended: %v", late, h.Forbidden.Log())
	}
}

// trigger opens the vector's page (or navigates the agent) in tab and
// clicks #go when the vector needs a gesture.
func trigger(t *testing.T, h *testhosts.Hosts, tab context.Context, v vector, target, name string) context.Context {
	if v.page == "" {
		u := target + testhosts.HitPath(name)
		errText, err := navigateNoWait(tab, u)
		if err != nil || errText != "" {
			t.Logf("agent navigation to %s: errorText=%q err=%v", u, errText, err)
		}
		return tab
	}
	u := h.VectorURL(v.page, target, name)
	if errText, err := navigateNoWait(tab, u); err != nil || errText != "" {
		t.Fatalf("navigate to vector page %s: errorText=%q err=%v", u, errText, err)
	}
	if v.click {
		if err := pollTrue(tab, 5*time.Second, `document.readyState === "complete" && !!document.getElementById("go")`); err != nil {
			t.Fatalf("vector page not ready: %v", err)
		}
		if _, err := evalBool(tab, 5*time.Second, `document.getElementById("go").click(), true`, withGesture); err != nil {
			t.Fatalf("click #go: %v", err)
		}
	}
	return tab
}

// runControl runs the vector against the sink in a tab of tabs: it shows
// that the vector works, and a fresh target is not what that is about.
func runControl(t *testing.T, h *testhosts.Hosts, tabs *tabPool, v vector) {
	name := v.name + "-control"
	before := h.Sink.Snapshot()
	trigger(t, h, tabs.get(t), v, v.control(h), name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v.connOnly {
		for h.Sink.Conns() <= before.Conns && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		if h.Sink.Conns() <= before.Conns {
			t.Errorf("control: no TCP connection reached the sink %s within 5s: the vector does not work, so its leak test proves nothing", v.control(h))
		}
		return
	}
	if err := h.Sink.WaitHits(ctx, testhosts.HitPath(name), 1); err != nil {
		t.Errorf("control: %v; sink log %v: the vector does not work, so its leak test proves nothing", err, h.Sink.Log())
	}
}

// runForbidden runs the vector against the forbidden host and returns how
// many forbidden requests it saw. The agent's own navigation runs in a new
// tab of bctx, whose first navigation is what it tests; a vector page loads
// on the allowed host first and attacks from there, in a tab of tabs.
func runForbidden(t *testing.T, h *testhosts.Hosts, bctx context.Context, tabs *tabPool, v vector) int {
	name := v.name + "-forbidden"
	path := testhosts.HitPath(name)
	before := h.Forbidden.Snapshot()
	target := v.forbidden(h)
	tab := newTabOr(t, bctx, tabs, v.page == "")
	tab = trigger(t, h, tab, v, target, name)
	// Done: the page says so, or the tab has left the vector page (a
	// navigation vector, blocked or not).
	doneExpr := `location.href !== "about:blank" && (window.__vectorDone === true || !location.pathname.startsWith("/vector/"))`
	if v.page == "" {
		doneExpr = `location.href !== "about:blank"`
	}
	if err := pollTrue(tab, 15*time.Second, doneExpr); err != nil {
		t.Logf("vector did not signal done (checking anyway): %v", err)
	}
	// A request the vector started before done has had its chance once a
	// later request of the same tab (or user) reached the sink.
	if err := sinkBarrier(t, h, bctx, tab, name); err != nil {
		t.Errorf("no barrier, so zero hits proves nothing: %v", err)
	}
	after := h.Forbidden.Snapshot()
	hits, conns := after.Total-before.Total, after.Conns-before.Conns
	if n := h.Forbidden.Hits(path); n > 0 {
		t.Errorf("LEAK: forbidden host got %d request(s) for %s via %s (target %s); log %v", n, path, v.name, target, h.Forbidden.Log())
	} else if hits > 0 {
		t.Errorf("LEAK: forbidden host got %d request(s) during %s (target %s); log %v", hits, v.name, target, h.Forbidden.Log())
	}
	if conns > 0 {
		t.Errorf("LEAK: forbidden listener accepted %d TCP connection(s) during %s (target %s)", conns, v.name, target)
	}
	return hits
}

// newTabOr returns a new tab of bctx if fresh, else a tab of tabs.
func newTabOr(t *testing.T, bctx context.Context, tabs *tabPool, fresh bool) context.Context {
	if fresh {
		return newTab(t, bctx)
	}
	return tabs.get(t)
}

// sinkBarrier is the positive barrier of a leak check: once a vector is
// done, tab fetches the sink and sinkBarrier waits (bounded) for that hit,
// which proves that requests the vector started earlier went through the
// browser and the guard first. A tab left on a page that cannot fetch (a
// blocked navigation's explanation page) has a new tab of bctx's user load
// the sink instead, through the same browser and guard.
func sinkBarrier(t *testing.T, h *testhosts.Hosts, bctx, tab context.Context, name string) error {
	t.Helper()
	return barrierAt(t, h.Sink, bctx, tab, name)
}

// barrierAt is sinkBarrier aimed at srv, an allowed server that is not the
// one whose zero is checked.
func barrierAt(t *testing.T, srv *testhosts.Server, bctx, tab context.Context, name string) error {
	t.Helper()
	path := testhosts.HitPath(name + "-barrier")
	expr := `fetch(` + strconv.Quote(srv.Origin()+path) + `, {mode: "no-cors", cache: "no-store"}).then(() => "ok", String)`
	got, err := step(tab, 15*time.Second, chromedp.Evaluate[string](expr, func(p *runtime.EvaluateParams) { p.AwaitPromise = new(true) }))
	if err != nil || got != "ok" {
		path += "-tab"
		nt := newTab(t, bctx)
		if errText, err := navigateNoWait(nt, srv.Origin()+path); err != nil || errText != "" {
			return fmt.Errorf("barrier: the tab's fetch: %q %v; a new tab: %q %w", got, err, errText, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.WaitHits(ctx, path, 1)
}
