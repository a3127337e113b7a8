package e2e

import (
	"context"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// sideEnv is one browser the side-channel vectors run in: a guard in one
// service-worker mode, or (for the controls of channels the guard closes for
// every host) an unguarded Chromium.
type sideEnv struct {
	name string
	bctx context.Context
	tabs *tabPool    // bctx's tabs, reused by control runs
	log  *tailBuffer // the guard's log, for leak reports; nil when unguarded
}

// newSideEnv connects to the endpoint at url.
func newSideEnv(t *testing.T, name, url string, log *tailBuffer) *sideEnv {
	bctx := connect(t, url)
	return &sideEnv{name: name, bctx: bctx, tabs: newTabPool(t, bctx), log: log}
}

// sideVector is one page-driven side channel (no egress outside the allowlist: README "Security model"): a control run
// that must reach an allowed listener (so the vector works and its
// forbidden run proves something) and a forbidden run whose listener must
// see no request and no TCP connection.
type sideVector struct {
	name  string
	page  string     // vector page under /vector/, without ".html"
	query url.Values // extra query parameters of the vector page
	click bool       // click #go with a user gesture
	// closeTab closes the tab once the page is ready (unload vectors).
	closeTab bool
	// ownTab: the control run needs a tab of its own too, because what the
	// page started outlives about:blank (WebRTC's STUN retransmissions go
	// on until the tab closes; a lent control tab's packets were counted
	// by the forbidden run after it).
	ownTab bool
	// connOnly vectors make no HTTP request; the control waits for a TCP
	// connection to its listener instead of a hit.
	connOnly bool
	// ctlEnv and badEnv are the browsers of the control and forbidden runs
	// (default: the block-mode guard).
	ctlEnv, badEnv *sideEnv
	// ctlTarget and badTarget are the target origins (default: the sink and
	// the forbidden host).
	ctlTarget, badTarget string
	// ctlServer and badServer are the listeners (default: Sink, Forbidden).
	ctlServer, badServer *testhosts.Server
	// skipIf names a Preload status that turns a failed control into a
	// skip: Chrome refused the vector itself, guarded or not.
	skipIf string
	// check, if set, makes extra checks after the forbidden run.
	check func(t *testing.T, tab context.Context, env *sideEnv)
}

// launchSide starts a guard with guardConfig's policy, edited, capturing its
// log for leak reports.
func launchSide(t *testing.T, name string, edit func(*cdpguard.Config)) *sideEnv {
	t.Helper()
	cfg := guardConfig(t)
	log := &tailBuffer{max: 256 << 10}
	var h slog.Handler = slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})
	if os.Getenv("CDPGUARD_E2E_LOG") == "1" {
		h = teeHandler{h, slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})}
	}
	cfg.Logger = slog.New(h)
	edit(&cfg)
	g := cdptest.StartGuard(t, cfg)
	return newSideEnv(t, name, g.URL(), log)
}

// TestSideChannels runs every side channel of issue 3 against two guards
// (service workers blocked, and guarded), with unguarded Chromium controls
// for the channels the guard closes for every host (WebRTC UDP, DNS
// prefetch), and cdpguard killed with SIGKILL while a page polls. It ends
// with the summary "N vectors, 0 leaks" and the list.
func TestSideChannels(t *testing.T) {
	parallelSuite(t) // own browser and test hosts: runs beside the other heavy suites, to keep CI under 10 minutes
	needBrowser(t)
	if directMode() {
		t.Skip("skipping: side channels are measured against the guard; direct mode is for the leak harness")
	}
	start := time.Now()
	h := testhosts.Start(t)
	sum := &sideSummary{}
	defer func() {
		sum.report(t)
		t.Logf("side-channel suite took %v", time.Since(start).Round(100*time.Millisecond))
	}()

	// Service workers need a secure context; both guards get the flag, so
	// that block mode is refused by the guard, not by the context.
	// The forbidden origin is listed too, so that vectors that need a
	// secure target (speculation-rules prefetch) are attempted at all.
	insecure := "--unsafely-treat-insecure-origin-as-secure=" + strings.Join([]string{
		h.Allowed.Origin(), h.Sink.Origin(), h.Forbidden.Origin(), sameSiteEvil(h)}, ",")
	block := launchSide(t, "block", func(c *cdpguard.Config) {
		// localhost resolves to loopback through /etc/hosts, not HostMap:
		// the proxy must refuse it.
		c.Allow = append(c.Allow, "localhost")
		c.ChromeFlags = append(c.ChromeFlags, insecure)
	})
	guard := launchSide(t, "guard", func(c *cdpguard.Config) {
		c.ServiceWorkers = "guard"
		c.Allow = append(c.Allow, "localhost", "127.0.0.1:"+strconv.Itoa(h.Sink.Port))
		c.AllowPrivate = []string{"127.0.0.0/8"}
		c.ChromeFlags = append(c.ChromeFlags, insecure)
	})
	// The unguarded control browser maps *.test to loopback and resolves
	// other names itself.
	unguarded := newSideEnv(t, "unguarded", startChromium(t).URL, nil)

	for _, v := range sideVectors(h, block, guard, unguarded) {
		rec := sum.vector(v.name)
		t.Run(v.name, func(t *testing.T) {
			rec.ran = true
			t.Run("control", func(t *testing.T) {
				defer func() { rec.skipped = t.Skipped() }()
				rec.controlBad = !sideControl(t, h, v)
			})
			t.Run("forbidden", func(t *testing.T) { rec.leak = !sideForbidden(t, h, v) })
		})
	}
	sideWebRTC(t, h, sum, block, unguarded)
	sideDNSPrefetch(t, h, sum, block, unguarded)
	rec := sum.vector("sigkill-while-polling")
	t.Run("sigkill-while-polling", func(t *testing.T) { rec.ran = true; sideSIGKILL(t, h, rec) })

	if s := h.Forbidden.Snapshot(); s.Total > 0 || s.Conns > 0 {
		t.Errorf("LEAK: over the whole run the forbidden host saw %d requests and %d TCP connections: %v", s.Total, s.Conns, h.Forbidden.Log())
	}
}

// sideVectors lists the page-driven side channels with their defaults
// filled in.
func sideVectors(h *testhosts.Hosts, block, guard, unguarded *sideEnv) []sideVector {
	q := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	https := func(s *testhosts.Server) string { return "https://" + s.Name + ":" + strconv.Itoa(s.Port) }
	vs := []sideVector{
		{name: "websocket-page", page: "websocket"},
		{name: "websocket-dedicated-worker", page: "ws-worker"},
		{name: "websocket-shared-worker", page: "ws-shared"},
		// The control needs an allowlisted IP entry (127.0.0.1:SINK), which
		// only the guard-mode guard has; there 127.0.0.0/8 is even allowed
		// as an address, so only the port rule stops the forbidden run.
		// The block-mode guard has no IP entry at all.
		{name: "websocket-ip-literal", page: "websocket", ctlEnv: guard, badEnv: guard,
			ctlTarget: h.Sink.IPOrigin(), badTarget: h.Forbidden.IPOrigin()},
		{name: "websocket-ip-literal-noentry", page: "websocket", ctlEnv: guard,
			ctlTarget: h.Sink.IPOrigin(), badTarget: h.Forbidden.IPOrigin()},
		{name: "eventsource", page: "eventsource"},
		{name: "link-prefetch", page: "link", query: q("rel", "prefetch")},
		{name: "link-preload", page: "link", query: q("rel", "preload")},
		// Through a proxy Chrome 156 preconnects to the proxy only, never
		// sending a CONNECT (seen in the proxy's log), for allowed hosts
		// too: the control is an unguarded Chromium.
		{name: "link-preconnect", page: "link", query: q("rel", "preconnect"), connOnly: true, ctlEnv: unguarded},
		{name: "link-preconnect-https", page: "link", query: q("rel", "preconnect"), connOnly: true, ctlEnv: unguarded,
			ctlTarget: https(h.Sink), badTarget: https(h.Forbidden)},
		// With a proxy configured Chrome never prefetches cross-site
		// (PrefetchNotEligibleExistingProxy), so the forbidden host is a
		// same-site name outside the allowlist: then Chrome does try.
		{name: "speculation-prefetch", page: "speculation", query: q("action", "prefetch"),
			badTarget: sameSiteEvil(h)},
		// Chrome 156 refuses to prerender in a tab under CDP
		// (PrerenderingDisabledByDevTools, unguarded too, even after
		// Page.setPrerenderingAllowed): the control then skips.
		{name: "speculation-prerender", page: "speculation", query: q("action", "prerender"),
			skipIf: "PrerenderingDisabledByDevTools"},
		{name: "a-ping", page: "ping", click: true},
		{name: "fetch-keepalive-on-close", page: "keepalive", closeTab: true},
		{name: "sw-install-fetch", page: "sw", query: q("mode", "install"), ctlEnv: guard, badEnv: guard},
		{name: "sw-fetch-handler", page: "sw", query: q("mode", "handler"), ctlEnv: guard, badEnv: guard},
		// Block mode: the worker would fetch an ALLOWED host on install; it
		// must never register, so the sink must see nothing.
		{name: "sw-register-blocked", page: "sw", query: q("mode", "install"), ctlEnv: guard, badEnv: block,
			badTarget: h.Sink.Origin(), badServer: h.Sink, check: checkSWBlocked},
		{name: "import-scripts", page: "import-scripts"},
		{name: "dynamic-import", page: "dynamic-import"},
		{name: "css-import", page: "css-vectors", query: q("kind", "import")},
		{name: "css-background-image", page: "css-vectors", query: q("kind", "background")},
		{name: "css-font-face", page: "css-vectors", query: q("kind", "fontface")},
		{name: "frame-data", page: "frames", query: q("kind", "data")},
		{name: "frame-blob", page: "frames", query: q("kind", "blob")},
		{name: "frame-about-blank", page: "frames", query: q("kind", "about-blank")},
		{name: "frame-srcdoc", page: "frames", query: q("kind", "srcdoc")},
		{name: "a-download", page: "download", click: true},
		// An allowed name whose DNS answer (/etc/hosts, not HostMap) is
		// loopback: refused unless AllowPrivate covers it (the guard-mode
		// guard has 127.0.0.0/8). The listener is the sink by that name.
		{name: "private-address-by-dns", page: "fetch", ctlEnv: guard,
			ctlTarget: origin("localhost", h.Sink.Port), badTarget: origin("localhost", h.Sink.Port), badServer: h.Sink},
	}
	for i := range vs {
		v := &vs[i]
		v.ctlEnv, v.badEnv = cmpOr(v.ctlEnv, block), cmpOr(v.badEnv, block)
		v.ctlServer, v.badServer = cmpOr(v.ctlServer, h.Sink), cmpOr(v.badServer, h.Forbidden)
		if v.ctlTarget == "" {
			v.ctlTarget = h.Sink.Origin()
		}
		if v.badTarget == "" {
			v.badTarget = h.Forbidden.Origin()
		}
	}
	return vs
}

// sameSiteEvil is the forbidden listener by a name in the allowed host's
// site that the allowlist does not name.
func sameSiteEvil(h *testhosts.Hosts) string {
	return origin("evil."+testhosts.AllowedName, h.Forbidden.Port)
}

func cmpOr[T any](p, def *T) *T {
	if p == nil {
		return def
	}
	return p
}

// checkSWBlocked checks that registration failed and the guard said why.
func checkSWBlocked(t *testing.T, tab context.Context, env *sideEnv) {
	note, err := step(tab, 5*time.Second, chromedp.Evaluate[string](`String(window.__vectorNote)`))
	if err != nil || !strings.HasPrefix(note, "register failed") {
		t.Errorf("block mode: service worker registration did not fail: note %q err %v", note, err)
	}
	if !strings.Contains(env.log.String(), "service workers are blocked") {
		t.Errorf("block mode: the guard's log does not say the service worker was blocked")
	}
}

func (v sideVector) url(h *testhosts.Hosts, target, name string) string {
	u := h.VectorURL(v.page, target, name)
	if len(v.query) > 0 {
		u += "&" + v.query.Encode()
	}
	return u
}

// openSide opens the vector page in a tab of env, then clicks #go or
// closes the tab as the vector needs. A run takes a tab of env.tabs unless
// the vector closes its tab, watches its preloads (the listeners belong to
// the tab) or needs its own (ownTab). A forbidden run too, as in TestLeaks:
// every vector loads its own page on the allowed host first and attacks
// from there, so a fresh target is not what it tests; what an earlier page
// of a lent tab left running is still counted (by the run it reaches, and
// by the suite's whole-run checks), and a new tab per run cost a renderer
// and a chromedp attach each (issue 37).
func openSide(t *testing.T, h *testhosts.Hosts, env *sideEnv, v sideVector, target, name string) (context.Context, *preloadLog) {
	t.Helper()
	var tab context.Context
	closeIt := func() {}
	if !v.closeTab && !v.ownTab && v.page != "speculation" {
		tab = env.tabs.get(t)
	} else {
		var cancel context.CancelFunc
		tab, cancel = openTab(t, env.bctx)
		var once sync.Once
		closeIt = func() { once.Do(func() { closeTab(t, cancel) }) }
		t.Cleanup(closeIt)
	}
	pl := &preloadLog{}
	if v.page == "speculation" {
		watchPreload(t, tab, pl)
	}
	u := v.url(h, target, name)
	if errText, err := navigateNoWait(tab, u); err != nil || errText != "" {
		t.Fatalf("navigate to vector page %s: errorText=%q err=%v", u, errText, err)
	}
	if v.click || v.closeTab {
		if err := pollTrue(tab, 5*time.Second, `document.readyState === "complete" && (window.__vectorDone === true || !!document.getElementById("go"))`); err != nil {
			t.Fatalf("vector page not ready: %v", err)
		}
	}
	if v.click {
		if _, err := evalBool(tab, 5*time.Second, `document.getElementById("go").click(), true`, withGesture); err != nil {
			t.Fatalf("click #go: %v", err)
		}
	}
	if v.closeTab {
		closeIt()
	}
	return tab, pl
}

// sideControl runs the vector against the allowed listener and reports
// whether it arrived.
func sideControl(t *testing.T, h *testhosts.Hosts, v sideVector) bool {
	name := v.name + "-control"
	before := v.ctlServer.Snapshot()
	_, pl := openSide(t, h, v.ctlEnv, v, v.ctlTarget, name)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	if v.connOnly {
		for v.ctlServer.Conns() <= before.Conns && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		if v.ctlServer.Conns() <= before.Conns {
			t.Errorf("control (%s): no TCP connection reached %s within 6s: the vector does not work, so its leak test proves nothing", v.ctlEnv.name, v.ctlTarget)
			return false
		}
		return true
	}
	if v.skipIf != "" {
		// Chrome's refusal shows in the preload log at once: waiting the
		// whole bound for a hit it will never send is dead time.
		waitFor(6*time.Second, func() bool {
			return v.ctlServer.Hits(testhosts.HitPath(name)) > 0 || strings.Contains(pl.String(), v.skipIf)
		})
		if v.ctlServer.Hits(testhosts.HitPath(name)) == 0 && strings.Contains(pl.String(), v.skipIf) {
			t.Skipf("skipping: Chrome refused the vector itself (%s), guarded or not; the forbidden run still runs", v.skipIf)
		}
	}
	if err := v.ctlServer.WaitHits(ctx, testhosts.HitPath(name), 1); err != nil && v.skipIf != "" && strings.Contains(pl.String(), v.skipIf) {
		t.Skipf("skipping: Chrome refused the vector itself (%s), guarded or not; the forbidden run still runs", v.skipIf)
	} else if err != nil {
		t.Errorf("control (%s): %v; log %v: the vector does not work, so its leak test proves nothing", v.ctlEnv.name, err, v.ctlServer.Log())
		return false
	}
	return true
}

// sideForbidden runs the vector against the forbidden listener and reports
// whether it stayed untouched.
func sideForbidden(t *testing.T, h *testhosts.Hosts, v sideVector) bool {
	name := v.name + "-forbidden"
	before := v.badServer.Snapshot()
	tab, pl := openSide(t, h, v.badEnv, v, v.badTarget, name)
	if !v.closeTab {
		done := `location.href !== "about:blank" && (window.__vectorDone === true || !location.pathname.startsWith("/vector/"))`
		if err := pollTrue(tab, 6*time.Second, done); err != nil {
			t.Logf("vector did not signal done (checking anyway): %v", err)
		}
	}
	// The positive barrier: a later request of the same tab (or user) to
	// the page host arrived, so requests the vector started had their
	// chance. (The sink can be a forbidden run's listener here.)
	if err := barrierAt(t, h.Allowed, v.badEnv.bctx, tab, name); err != nil {
		t.Errorf("no barrier, so zero hits proves nothing: %v", err)
	}
	if v.page == "speculation" && strings.Contains(pl.String(), "NotEligible") {
		t.Errorf("Chrome did not attempt the forbidden speculation at all, so this run proves nothing:\n%s", pl)
	}
	after := v.badServer.Snapshot()
	hits, conns := after.Total-before.Total, after.Conns-before.Conns
	if hits == 0 && conns == 0 {
		if v.check != nil {
			v.check(t, tab, v.badEnv)
		}
		return true
	}
	t.Errorf("LEAK via %s (%s): listener %s got %d request(s) and %d TCP connection(s) for target %s; log %v\nguard log:\n%s",
		v.name, v.badEnv.name, v.badServer.Origin(), hits, conns, v.badTarget, v.badServer.Log(), guardLogAbout(v.badEnv, name))
	return false
}

// guardLogAbout returns the guard's log lines that mention name or a
// refusal, for leak reports.
func guardLogAbout(env *sideEnv, name string) string {
	if env.log == nil {
		return "(unguarded)"
	}
	var out []string
	for _, l := range strings.Split(env.log.String(), "\n") {
		if strings.Contains(l, name) || strings.Contains(l, "egress") {
			out = append(out, l)
		}
	}
	if len(out) > 40 {
		out = out[len(out)-40:]
	}
	return strings.Join(out, "\n")
}
