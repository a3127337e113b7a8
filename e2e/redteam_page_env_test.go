// Listeners, guards and helpers for TestRedTeamPage (redteam_page_test.go).

package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
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

// rtpCounter is a listener the red-team page vectors aim at: the forbidden
// hosts, whose hits per path must stay zero, and the sink for controls.
type rtpCounter interface {
	Hits(path string) int
	Snapshot() testhosts.Snapshot
}

// rtpListener is a second forbidden listener on a loopback port that no
// allowlist entry names, reached by IP literal (in several spellings).
type rtpListener struct {
	Port  int
	mu    sync.Mutex
	hits  map[string]int
	total int
	conns int
	log   []string
}

func (l *rtpListener) Hits(p string) int { l.mu.Lock(); defer l.mu.Unlock(); return l.hits[p] }
func (l *rtpListener) Snapshot() testhosts.Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return testhosts.Snapshot{Total: l.total, Conns: l.conns}
}

// rtpServe serves h on a fresh loopback port until t ends; onConn, if set,
// is called for each accepted connection.
func rtpServe(t *testing.T, h http.Handler, onConn func()) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	if onConn != nil {
		srv.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				onConn()
			}
		}
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func startRTPListener(t *testing.T) *rtpListener {
	l := &rtpListener{hits: map[string]int{}}
	l.Port = rtpServe(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.hits[r.URL.Path]++
		l.total++
		l.log = append(l.log, r.Method+" "+r.Host+" "+r.URL.Path)
		l.mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		fmt.Fprint(w, testhosts.ForbiddenBody)
	}), func() { l.mu.Lock(); l.conns++; l.mu.Unlock() })
	return l
}

// rtpAux is a second allowed server (allowed.test on its own port) that
// answers with the response-header tricks: 302/307 redirects, a Link header
// and a Refresh header, each aimed at ?to=. It records the fetch-metadata
// headers of /hit/ requests, as evidence for the proposed endpoint fix.
type rtpAux struct {
	origin string
	port   int
	mu     sync.Mutex
	meta   map[string]string // hit path -> "Origin=... Sec-Fetch-Site=..."
}

func (a *rtpAux) metaOf(path string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	m, ok := a.meta[path]
	return m, ok
}

func startRTPAux(t *testing.T) *rtpAux {
	a := &rtpAux{meta: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/hit/", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.meta[r.URL.Path] = fmt.Sprintf("Origin=%q Sec-Fetch-Site=%q Sec-Fetch-Mode=%q", r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Sec-Fetch-Mode"))
		a.mu.Unlock()
		fmt.Fprint(w, "hit")
	})
	mux.HandleFunc("/r302", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/r307", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/link", func(w http.ResponseWriter, r *http.Request) {
		rel := r.URL.Query().Get("rel")
		w.Header().Set("Link", "<"+r.URL.Query().Get("to")+">; rel="+rel)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>link header</title><script>setTimeout(()=>{window.__vectorDone=true},1500)</script>")
	})
	mux.HandleFunc("/refresh", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Refresh", "0; url="+r.URL.Query().Get("to"))
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>refresh header</title>")
	})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
	a.port = rtpServe(t, h, nil)
	a.origin = origin(testhosts.AllowedName, a.port)
	return a
}

// rtpEnv is one guard the hostile pages run in: pages open in user
// mallory's context, the victim tab in the fallback context.
type rtpEnv struct {
	name      string
	g         *cdpguard.Guard
	bctx      context.Context // mallory
	tabs      *tabPool        // mallory's tabs, reused by the vectors
	fallback  context.Context // a connection without the session header
	victim    context.Context // a fallback-user tab
	victimID  string
	proxyPort int
	log       *tailBuffer
}

var rtpProxyFlag = regexp.MustCompile(`--proxy-server=http://127\.0\.0\.1:(\d+)`)

// launchRTP starts a guard and finds its egress proxy port in its Chrome's
// command line (the port is not exported).
func launchRTP(t *testing.T, h *testhosts.Hosts, name string, edit func(*cdpguard.Config)) *rtpEnv {
	t.Helper()
	cfg := guardConfig(t)
	log := &tailBuffer{max: 512 << 10}
	cfg.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	edit(&cfg)
	// A flag Chrome ignores marks this guard's browser among the others
	// that suites running in parallel launch meanwhile.
	marker := fmt.Sprintf("--cdpguard-e2e-env=%s-%d", name, time.Now().UnixNano())
	cfg.ChromeFlags = append(cfg.ChromeFlags, marker)
	g := cdptest.StartGuard(t, cfg)
	e := &rtpEnv{name: name, g: g, log: log}
	for _, p := range descendants(os.Getpid()) {
		if m := rtpProxyFlag.FindStringSubmatch(p.cmd); m != nil && strings.Contains(p.cmd+" ", marker+" ") {
			e.proxyPort, _ = strconv.Atoi(m[1])
			break
		}
	}
	if e.proxyPort == 0 {
		t.Fatalf("%s: no --proxy-server flag found in the new Chrome's command line", name)
	}
	e.bctx, _ = connectUser(t, g.URL(), "mallory")
	e.tabs = newTabPool(t, e.bctx)
	e.fallback = connect(t, g.URL())
	e.victim, e.victimID = e.newVictim(t, h)
	return e
}

// newVictim opens a tab of the fallback user (another user than the
// hostile page's) and returns it and its target id.
func (e *rtpEnv) newVictim(t *testing.T, h *testhosts.Hosts) (context.Context, string) {
	tab := newTab(t, e.fallback)
	if errText, err := navigateNoWait(tab, h.PageURL("/page.html?victim")); err != nil || errText != "" {
		t.Fatalf("victim tab: %q %v", errText, err)
	}
	return tab, string(chromedp.FromContext(tab).Target.TargetID)
}
