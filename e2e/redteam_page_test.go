package e2e

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sort"
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

// rtpVector is one hostile-page vector: a control run aimed at ctl (which
// must reach ctlSrv, so the vector works) and a forbidden run aimed at bad
// (which must not reach badSrv).
type rtpVector struct {
	name, kind, extra string
	env               *rtpEnv
	click             bool
	ctl, bad          string
	ctlSrv, badSrv    rtpCounter
	// why, when ctl is empty, says why there is no control run.
	why string
	// optional: a failed control means Chrome itself refuses the vector
	// (recorded with the page's note as evidence), not a broken test.
	optional bool
	// check, if set, replaces the listener check of the forbidden run and
	// returns "" or the leak it saw.
	check func(note string, victim context.Context) string
}

type rtpResult struct{ control, forbidden, note string }

// TestRedTeamPage attacks cdpguard from hostile web pages served by the
// allowed host: every vector's forbidden listener (evil.test, a loopback
// port by IP literal, UDP on both) must stay at zero, and the guard's own
// endpoint, its egress proxy and another user's tab must stay out of reach.
func TestRedTeamPage(t *testing.T) {
	parallelSuite(t) // own browser and test hosts: runs beside the other heavy suites, to keep CI under 10 minutes
	needBrowser(t)
	if directMode() {
		t.Skip("skipping: the red team attacks the guard")
	}
	start := time.Now()
	h := testhosts.Start(t)
	fb2 := startRTPListener(t)
	udpEvil := testhosts.StartUDP(t, "127.0.0.1:"+strconv.Itoa(h.Forbidden.Port))
	udpFB2 := testhosts.StartUDP(t, "127.0.0.1:"+strconv.Itoa(fb2.Port))
	ax := startRTPAux(t)
	aux := ax.origin
	secure := "--unsafely-treat-insecure-origin-as-secure=" + strings.Join([]string{h.Allowed.Origin(), h.Sink.Origin(), h.Forbidden.Origin(), aux}, ",")
	// plain: the allowlist names the sink by IP and port only, so the
	// second forbidden listener (same address, other port) is refused by
	// the port rule alone.
	plainEnv := launchRTP(t, h, "plain", func(c *cdpguard.Config) {
		c.Allow = append(c.Allow, "127.0.0.1:"+strconv.Itoa(h.Sink.Port))
		c.ChromeFlags = append(c.ChromeFlags, secure)
	})
	// ipEntry: the allowlist names 127.0.0.1 (every port), so only the
	// endpoint's own Origin/Host/user defences stand between a page and
	// the guard.
	ipEnv := launchRTP(t, h, "ip-entry", func(c *cdpguard.Config) {
		c.Allow = append(c.Allow, "127.0.0.1", "localhost")
		c.ChromeFlags = append(c.ChromeFlags, secure)
	})

	res := map[string]*rtpResult{}
	var mu sync.Mutex
	t.Run("vectors", func(t *testing.T) {
		// The vectors mostly wait on the browser (a page's settle time, a
		// hit to arrive), so rtpConcurrent of them run at once. They are
		// subtests started from goroutines, not t.Parallel ones: parallel
		// subtests share go test's -parallel slots (GOMAXPROCS, 2 on CI)
		// with every other parallel suite, which ran this suite two
		// vectors at a time.
		sem := make(chan struct{}, rtpConcurrent)
		var wg sync.WaitGroup
		for _, v := range rtpVectors(h, fb2, aux, plainEnv, ipEnv) {
			r := &rtpResult{}
			res[v.name] = r
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				t.Run(v.name, func(t *testing.T) {
					c, f, n := rtpRun(t, h, aux, v)
					mu.Lock()
					*r = rtpResult{c, f, n}
					mu.Unlock()
				})
			})
		}
		wg.Wait()
	})

	t.Run("sec-fetch-evidence", func(t *testing.T) { rtpSecFetch(t, h, ax, ipEnv) })
	for _, env := range []*rtpEnv{plainEnv, ipEnv} {
		if ok, err := evalBool(env.victim, 5*time.Second, `true`); err != nil || !ok {
			t.Errorf("LEAK (%s): the fallback user's victim tab %s is gone: %v", env.name, env.victimID, err)
		}
		cdptest.WaitHTTP(t, env.g.URL()+"/readyz", "ok", 5*time.Second)
	}
	for name, s := range map[string]testhosts.Snapshot{"evil.test": h.Forbidden.Snapshot(), "127.0.0.1:" + strconv.Itoa(fb2.Port): fb2.Snapshot()} {
		if s.Total > 0 || s.Conns > 0 {
			t.Errorf("LEAK: over the whole run %s saw %d requests and %d TCP connections: %v %v", name, s.Total, s.Conns, h.Forbidden.Log(), fb2.log)
		}
	}
	if n := udpEvil.Packets() + udpFB2.Packets(); n > 0 {
		t.Errorf("LEAK: the forbidden UDP listeners got %d datagrams (from %v %v)", n, udpEvil.From(), udpFB2.From())
	}
	names := make([]string, 0, len(res))
	for n := range res {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s | %-34s | %-9s | note\n", "vector", "control", "forbidden")
	for _, n := range names {
		r := res[n]
		fmt.Fprintf(&b, "%-28s | %-34s | %-9s | %s\n", n, r.control, r.forbidden, r.note)
	}
	t.Logf("hostile-page red team, %d vectors, took %v:\n%s", len(res), time.Since(start).Round(100*time.Millisecond), b.String())
}

// rtpOpen opens the vector page in a tab of the vector's guard and clicks
// #go with a user gesture if the vector needs one. The tab is one the
// earlier vectors used (env.tabs): every vector loads its own page on the
// allowed host first and attacks from there, so a fresh target is not what
// it tests, and a tab costs three times a navigation.
func rtpOpen(t *testing.T, h *testhosts.Hosts, aux string, v rtpVector, target, name string) context.Context {
	t.Helper()
	q := url.Values{"target": {target}, "name": {name}, "kind": {v.kind}, "aux": {aux}, "extra": {v.extra}}
	if v.click {
		q.Set("gesture", "1")
	}
	tab := v.env.tabs.get(t)
	u := h.Allowed.Origin() + "/vector/rt-page.html?" + q.Encode()
	if errText, err := navigateNoWait(tab, u); err != nil || errText != "" {
		t.Fatalf("navigate to %s: %q %v", u, errText, err)
	}
	if v.click {
		if err := pollTrue(tab, 15*time.Second, `!!document.getElementById("go")`); err != nil {
			t.Fatalf("vector page not ready: %v", err)
		}
		if _, err := evalBool(tab, 15*time.Second, `document.getElementById("go").click(), true`, withGesture); err != nil {
			t.Fatalf("click #go: %v", err)
		}
	}
	return tab
}

// rtpNote waits (bounded) for the page's done() and returns its note.
func rtpNote(tab context.Context) string {
	if err := pollTrue(tab, 15*time.Second, `window.__vectorDone === true || !location.pathname.startsWith("/vector/")`); err != nil {
		return "(no done signal)"
	}
	note, err := step(tab, 2*time.Second, chromedp.Evaluate[string](`location.pathname.startsWith("/vector/") ? String(window.__vectorNote) : "left to " + location.href`))
	if err != nil {
		return "(note unreadable: " + err.Error() + ")"
	}
	return note
}

func rtpRun(t *testing.T, h *testhosts.Hosts, aux string, v rtpVector) (ctl, bad, note string) {
	ctl = "none: " + v.why
	if v.ctl != "" {
		name := v.name + "-control"
		tab := rtpOpen(t, h, aux, v, v.ctl, name)
		var err error
		// A bound on a positive event: a passing control ends at its hit,
		// so only a vector Chromium refuses (optional) waits it out.
		wait := 15 * time.Second
		if v.optional {
			wait = 3 * time.Second
		}
		for deadline := time.Now().Add(wait); v.ctlSrv.Hits(testhosts.HitPath(name)) == 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				err = fmt.Errorf("no hit on %s%s within %v", v.ctl, testhosts.HitPath(name), wait)
				break
			}
		}
		switch {
		case err == nil:
			ctl = "ok"
		case v.optional:
			ctl = "refused by Chromium 156"
			note = "control: " + rtpNote(tab) + "; "
		default:
			t.Errorf("control: %v (page note %q): the vector does not work, so its leak run proves nothing\nguard log:\n%s", err, rtpNote(tab), rtpLogAbout(v.env, name))
			ctl = "FAILED"
		}
	}
	name := v.name + "-forbidden"
	var victim context.Context
	if v.kind == "guardclose" {
		victim, v.extra = v.env.newVictim(t, h)
	}
	tab := rtpOpen(t, h, aux, v, v.bad, name)
	n := rtpNote(tab)
	note += n
	// The positive barrier: a later request of the same tab (or user)
	// reached the sink, so requests the vector started had their chance.
	if err := sinkBarrier(t, h, v.env.bctx, tab, name); err != nil {
		t.Errorf("%s: no barrier, so zero hits proves nothing: %v", name, err)
	}
	if v.kind == "guardws" {
		// Evidence of which layer stopped it: a Fetch or proxy refusal
		// names the guard's port; none means the endpoint's own Origin
		// check refused the upgrade.
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(v.env.g.URL(), "http://"))
		ev := fmt.Sprintf(" (guard log lines refusing :%s: %d)", port, rtpRefusals(v.env, port))
		n, note = n+ev, note+ev
	}
	if v.check != nil {
		if leak := v.check(n, victim); leak != "" {
			t.Errorf("LEAK via %s (%s): %s; page note %q\nguard log:\n%s", v.name, v.env.name, leak, n, rtpLogAbout(v.env, name))
			return ctl, "LEAK", note
		}
		return ctl, "0", note
	}
	if hits := v.badSrv.Hits(testhosts.HitPath(name)); hits > 0 {
		t.Errorf("LEAK via %s (%s): the forbidden listener got %d request(s) for %s; page note %q\nguard log:\n%s", v.name, v.env.name, hits, v.bad, n, rtpLogAbout(v.env, name))
		return ctl, "LEAK", note
	}
	return ctl, "0", note
}

// rtpConcurrent is how many vectors run at once; each has one tab open at a
// time.
const rtpConcurrent = 6

// rtpRefusals counts the guard's log lines that refuse something on port.
func rtpRefusals(env *rtpEnv, port string) int {
	n := 0
	for _, l := range strings.Split(env.log.String(), "\n") {
		if strings.Contains(l, ":"+port) && !strings.Contains(l, "cdpguard up") && (strings.Contains(l, "refus") || strings.Contains(l, "block")) {
			n++
		}
	}
	return n
}

func rtpLogAbout(env *rtpEnv, name string) string {
	var out []string
	for _, l := range strings.Split(env.log.String(), "\n") {
		if strings.Contains(l, name) {
			out = append(out, l)
		}
	}
	if len(out) > 20 {
		out = out[len(out)-20:]
	}
	return strings.Join(out, "\n")
}

// rtpVectors lists the vectors. ip(spell) aims a spelling of 127.0.0.1 at
// the sink (control, allowlisted as 127.0.0.1:SINK) and at the second
// forbidden listener (no entry for its port).
func rtpVectors(h *testhosts.Hosts, fb2 *rtpListener, aux string, plain, ipe *rtpEnv) []rtpVector {
	evil := func(name, kind string) rtpVector {
		return rtpVector{name: name, kind: kind, env: plain, ctl: h.Sink.Origin(), bad: h.Forbidden.Origin(), ctlSrv: h.Sink, badSrv: h.Forbidden}
	}
	opt := func(v rtpVector) rtpVector { v.optional = true; return v }
	click := func(v rtpVector) rtpVector { v.click = true; return v }
	ext := func(v rtpVector, extra string) rtpVector { v.extra = extra; return v }
	ip := func(name, kind, spell string) rtpVector {
		return rtpVector{name: name, kind: kind, env: plain, ctl: fmt.Sprintf(spell, h.Sink.Port), bad: fmt.Sprintf(spell, fb2.Port), ctlSrv: h.Sink, badSrv: fb2}
	}
	spell := func(name, ctlHost, badHost string) rtpVector {
		v := evil(name, "fetch")
		v.ctl, v.bad = origin(ctlHost, h.Sink.Port), origin(badHost, h.Forbidden.Port)
		return v
	}
	vs := []rtpVector{
		opt(evil("fetchLater", "fetchlater")),
		{name: "webtransport", kind: "webtransport", env: plain, bad: "https://" + testhosts.ForbiddenName + ":" + strconv.Itoa(h.Forbidden.Port), badSrv: h.Forbidden,
			why: "needs an HTTP/3 server; UDP to the port is counted"},
		opt(evil("fencedframe", "fencedframe")),
		ip("beacon-ip-decimal", "beacon", "http://2130706433:%d"),
		ip("beacon-ip-hex", "beacon", "http://0x7f.1:%d"),
		ip("beacon-ip-octal", "beacon", "http://0177.0.0.1:%d"),
		ip("fetch-ip-plain", "fetch", "http://127.0.0.1:%d"),
		opt(ip("fetch-ipv4-mapped-v6", "fetch", "http://[::ffff:127.0.0.1]:%d")),
		spell("fetch-pct-encoded-dot", "allowed.test%2e", "evil.test%2e"),
		spell("fetch-ideographic-dot", "allowed\u3002test", "evil\u3002test"),
		spell("fetch-fullwidth-dot", "allowed\uff0etest", "evil\uff0etest"),
		evil("meta-refresh", "metarefresh"),
		evil("javascript-url-nav", "jsurl"),
		opt(click(evil("view-source-popup", "viewsource"))),
		evil("redirect-3-hops-fetch", "redirect3"),
		evil("redirect-3-hops-nav", "redirect3nav"),
		evil("redirect-307-post", "post307"),
		ext(evil("link-header-preload", "linkheader"), "preload; as=image"),
		opt(ext(evil("link-header-prefetch", "linkheader"), "prefetch")),
		opt(ext(evil("link-header-modulepreload", "linkheader"), "modulepreload")),
		evil("refresh-header", "refreshheader"),
		evil("img-srcset", "srcset"),
		evil("picture-source", "picture"),
		evil("video-poster", "poster"),
		opt(evil("track", "track")),
		evil("svg-image-href", "svgimage"),
		opt(evil("svg-use-href", "svguse")),
		evil("css-image-set", "imageset"),
		evil("css-font-local-fallback", "fontlocal"),
		opt(evil("css-namespace", "cssnamespace")),
		evil("worker-data-url", "workerdata"),
		evil("worker-blob-url", "workerblob"),
		evil("shared-worker-blob", "sharedblob"),
		evil("import-scripts-blob-worker", "importblob"),
		evil("eventsource-credentials", "eventsourcecred"),
		opt(evil("service-worker-blob", "swblob")),
		opt(evil("notification-icon", "notification")),
		opt(click(evil("payment-request", "payment"))),
		evil("link-modulepreload", "modulepreload"),
		opt(evil("link-prerender-legacy", "prerender")),
		click(evil("about-blank-popup-iframe", "blankpopupiframe")),
		click(evil("form-target-blank", "formblank")),
		click(evil("a-noopener-click", "anoopener")),
	}
	for _, env := range []*rtpEnv{plain, ipe, ipe} {
		guard := strings.TrimSuffix(env.g.URL(), "/")
		wsPath := strings.TrimPrefix(env.g.WebSocketURL(), strings.Replace(guard, "http", "ws", 1))
		proxy := "http://127.0.0.1:" + strconv.Itoa(env.proxyPort)
		sfx := env.name
		if env == ipe && vs[len(vs)-1].env == ipe {
			// The second round on the ip-entry guard reaches it as
			// localhost (allowlisted there; /etc/hosts resolves it to the
			// named address 127.0.0.1), which its Host check accepts.
			guard = strings.Replace(guard, "127.0.0.1", "localhost", 1)
			proxy = strings.Replace(proxy, "127.0.0.1", "localhost", 1)
			sfx = "localhost"
		}
		vs = append(vs,
			rtpVector{name: "guard-json-close-" + sfx, kind: "guardclose", env: env, bad: guard,
				why: "the guard's endpoint; oracle: the fallback user's tab survives, /json/version unreadable",
				check: func(note string, victim context.Context) string {
					if ok, err := evalBool(victim, 3*time.Second, `true`); err != nil || !ok {
						return fmt.Sprintf("the victim tab was closed (%v)", err)
					}
					if strings.Contains(note, "READ ") {
						return "the page read /json/version"
					}
					return ""
				}},
			rtpVector{name: "guard-websocket-" + sfx, kind: "guardws", extra: wsPath, env: env, bad: guard,
				why: "the guard's endpoint; oracle: the socket never opens",
				check: func(note string, _ context.Context) string {
					if strings.HasPrefix(note, "OPEN") {
						return "a page drove the guard over CDP"
					}
					return ""
				}},
			rtpVector{name: "egress-proxy-self-" + sfx, kind: "proxyself", extra: h.Forbidden.Origin(), env: env, bad: proxy, badSrv: h.Forbidden,
				why: "the proxy itself; oracle: evil.test sees nothing, guard stays ready",
				check: func(string, context.Context) string {
					if s := h.Forbidden.Snapshot(); s.Total > 0 || s.Conns > 0 {
						return fmt.Sprintf("evil.test saw %d requests, %d conns", s.Total, s.Conns)
					}
					return ""
				}},
		)
	}
	return vs
}

// rtpSecFetch records the headers Chrome puts on a page's no-cors fetch to
// a loopback IP literal (potentially trustworthy, like the guard's own
// endpoint): no Origin, but Sec-Fetch-Site, which is what the proposed fix
// for guard-json-close keys on.
func rtpSecFetch(t *testing.T, h *testhosts.Hosts, ax *rtpAux, env *rtpEnv) {
	tab := newTab(t, env.bctx)
	if errText, err := navigateNoWait(tab, h.PageURL("/page.html?secfetch")); err != nil || errText != "" {
		t.Fatalf("navigate: %q %v", errText, err)
	}
	target := "http://127.0.0.1:" + strconv.Itoa(ax.port) + "/hit/rt-secfetch"
	if _, err := evalBool(tab, 5*time.Second, `fetch("`+target+`", {mode: "no-cors"}).catch(() => {}), true`); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m, ok := ax.metaOf("/hit/rt-secfetch"); ok {
			t.Logf("a page's no-cors GET to %s carries %s", target, m)
			return
		}
	}
	t.Errorf("the page's fetch to %s never arrived", target)
}
