// Package testhosts runs the loopback HTTP hosts that cdpguard's end-to-end
// tests aim a browser at: an allowed page server, a second allowed sink for
// control runs, and a forbidden listener whose hits must stay at zero. Every
// host counts requests per path, and the forbidden one also counts raw TCP
// connections, so a leak is seen even when no HTTP request follows the
// connect.
//
// The hosts listen on 127.0.0.1 only; the browser reaches them by the names
// allowed.test and evil.test through host-resolver rules
// (MAP *.test 127.0.0.1), so tests need no DNS.
package testhosts

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// AllowedName and ForbiddenName are the host names the browser uses for the
// allowed servers and the forbidden listener.
const (
	AllowedName   = "allowed.test"
	ForbiddenName = "evil.test"
)

// ForbiddenBody is the text the forbidden listener answers with. Tests look
// for it to tell a reached forbidden host from the guard's explanation page.
const ForbiddenBody = "FORBIDDEN HOST REACHED"

//go:embed pages
var pagesFS embed.FS

// Hosts is the set of servers one test uses.
type Hosts struct {
	// Allowed serves the pages (vector pages, client pages) at
	// http://allowed.test:P1.
	Allowed *Server
	// Sink is a second allowed origin, http://allowed.test:P3, that control
	// runs aim at instead of the forbidden listener.
	Sink *Server
	// Forbidden is http://evil.test:P2; its hits and connections must stay
	// zero in every leak test.
	Forbidden *Server
}

// Start starts the three hosts and stops them when t ends.
func Start(t testing.TB) *Hosts {
	t.Helper()
	pages, err := fs.Sub(pagesFS, "pages")
	if err != nil {
		t.Fatalf("testhosts: pages: %v", err)
	}
	h := &Hosts{}
	h.Allowed = startServer(t, AllowedName, func(s *Server) http.Handler { return pageHandler(s, pages) })
	h.Sink = startServer(t, AllowedName, sinkHandler)
	h.Forbidden = startServer(t, ForbiddenName, forbiddenHandler)
	return h
}

// Server is one counting loopback HTTP server.
type Server struct {
	// Name is the host name the browser uses for it.
	Name string
	// Port is its TCP port on 127.0.0.1.
	Port int

	mu    sync.Mutex
	hits  map[string]int
	total int
	conns int
	log   []string
}

// Origin returns http://NAME:PORT.
func (s *Server) Origin() string { return "http://" + s.Name + ":" + strconv.Itoa(s.Port) }

// IPOrigin returns http://127.0.0.1:PORT, the same server by IP literal.
func (s *Server) IPOrigin() string { return "http://127.0.0.1:" + strconv.Itoa(s.Port) }

// Hits returns how many requests for path the server has seen.
func (s *Server) Hits(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// Total returns how many HTTP requests the server has seen on any path.
func (s *Server) Total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// Conns returns how many TCP connections the server has accepted.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// Log returns the last requests seen, as "METHOD HOST PATH", for failure
// messages.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Reset sets every counter back to zero.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits = map[string]int{}
	s.total, s.conns = 0, 0
	s.log = nil
}

// WaitHits waits until path has at least n hits or ctx ends.
func (s *Server) WaitHits(ctx context.Context, path string, n int) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if got := s.Hits(path); got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d hits on %s%s (got %d): %w", n, s.Origin(), path, s.Hits(path), ctx.Err())
		case <-tick.C:
		}
	}
}

// Snapshot is the state of a server's counters at one moment.
type Snapshot struct {
	Total, Conns int
}

// Snapshot returns the current counters.
func (s *Server) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Snapshot{Total: s.total, Conns: s.conns}
}

// HitPath is the path a vector named name requests on its target.
func HitPath(name string) string { return "/hit/" + name }

// VectorURL returns the allowed page that runs vector against target (an
// origin such as http://evil.test:P2) and requests HitPath(name) there.
func (h *Hosts) VectorURL(vector, target, name string) string {
	q := url.Values{"target": {target}, "name": {name}}
	return h.Allowed.Origin() + "/vector/" + vector + ".html?" + q.Encode()
}

// PageURL returns an allowed page by path, e.g. "/page.html".
func (h *Hosts) PageURL(path string) string { return h.Allowed.Origin() + path }

func (s *Server) record(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[r.URL.Path]++
	s.total++
	s.log = append(s.log, r.Method+" "+r.Host+" "+r.URL.Path)
	if len(s.log) > 50 {
		s.log = s.log[len(s.log)-50:]
	}
}

func (s *Server) countConn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns++
}

func startServer(t testing.TB, name string, handler func(*Server) http.Handler) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testhosts: listen: %v", err)
	}
	s := &Server{Name: name, Port: ln.Addr().(*net.TCPAddr).Port, hits: map[string]int{}}
	next := handler(s)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.record(r)
			next.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(&countingListener{Listener: ln, s: s}); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("testhosts: serve %s: %v", s.Origin(), err)
		}
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
	})
	return s
}

// countingListener counts accepted connections before any byte is read.
type countingListener struct {
	net.Listener
	s *Server
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.s.countConn()
	}
	return c, err
}

// pageHandler serves the embedded pages, a redirector and /hit/ paths.
func pageHandler(s *Server, pages fs.FS) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServerFS(pages))
	// /redirect?to=URL answers 302 to URL: a hop from the allowed host.
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		to := r.URL.Query().Get("to")
		if to == "" {
			http.Error(w, "missing to", http.StatusBadRequest)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, to, http.StatusFound)
	})
	mux.HandleFunc("/hit/", hitResponse)
	return noStore(mux)
}

// sinkHandler answers every request like a hit.
func sinkHandler(*Server) http.Handler { return noStore(http.HandlerFunc(hitResponse)) }

// forbiddenHandler answers every request with ForbiddenBody, so a test that
// reads the page can tell the forbidden host from an explanation page.
func forbiddenHandler(*Server) http.Handler {
	return noStore(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		fmt.Fprintf(w, "<!doctype html><title>forbidden</title><p>%s</p>\n", ForbiddenBody)
	}))
}

// hitResponse answers a vector's request with something each vector can
// consume: an event stream for EventSource, an empty body otherwise.
// ?delay=MS (at most 2000) holds the answer that long: a navigation whose
// response comes late.
func hitResponse(w http.ResponseWriter, r *http.Request) {
	if ms, err := strconv.Atoi(r.URL.Query().Get("delay")); err == nil && ms > 0 {
		select {
		case <-time.After(time.Duration(min(ms, 2000)) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "retry: 60000\ndata: hit\n\n")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "hit\n")
}

func noStore(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}
