// Package supervise keeps a managed browser guarded for a long-lived
// service: it owns the endpoint's listener and the current guard, relaunches
// the browser when it dies, answers 503 while no guard is ready and gives up
// after too many failures in a window. cdpguard.Supervisor is its public
// face; the guard itself is reached only through the Guard interface.
package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cdpguard/cdpguard/internal/devtoolsjson"
	"github.com/cdpguard/cdpguard/internal/httpgate"
)

// Guard is one guarded browser as the supervisor keeps it. Its methods
// are called on a nil pointer too (no guard now): Serving reports false.
type Guard interface {
	http.Handler
	// Serving reports whether the guard is ready and its browser
	// connection still up.
	Serving() bool
	// Done is closed when the guard stopped.
	Done() <-chan struct{}
	// ExitErr is how the browser ended, for the log.
	ExitErr() error
	// CloseAgents ends every agent connection with code and reason.
	CloseAgents(code int, reason string)
	Close() error
}

// Counter counts one thing (a prometheus.Counter).
type Counter interface{ Inc() }

// Options are what a Supervisor needs. A zero MaxFailures, Window or
// Backoff means 5, 5 minutes or 500 ms (cdpguard.SupervisorOptions).
type Options[G Guard] struct {
	MaxFailures int
	Window      time.Duration
	Backoff     time.Duration
	// Launch launches a guard serving through the supervisor's listener;
	// last is the guard whose browser died (nil at first and after a failed
	// launch), whose state (the policy in force) the new one may keep.
	Launch    func(ctx context.Context, last G) (G, error)
	Gate      httpgate.Gate // the request checks while no guard is ready
	Metrics   http.Handler  // GET /metrics while no guard is ready
	Restarts  Counter       // counts a relaunched browser guarded again; may be nil
	ErrGaveUp error         // wrapped by Err when it gives up
	Log       *slog.Logger
}

// Supervisor is the running supervision of one browser after another. G
// is a pointer type (*T) so that the current guard is one atomic pointer.
type Supervisor[T any, G interface {
	*T
	Guard
}] struct {
	opts Options[G]
	ln   net.Listener
	srv  *http.Server

	cur atomic.Pointer[T] // nil between browsers

	mu     sync.Mutex // orders installing a new guard against Close
	closed bool

	ctx  context.Context // ends at Close; bounds relaunches
	stop context.CancelFunc
	wg   sync.WaitGroup

	closeOnce sync.Once
	done      chan struct{}
	errMu     sync.Mutex
	err       error
}

// New returns a supervisor of ln that has launched nothing yet (Start).
func New[T any, G interface {
	*T
	Guard
}](ln net.Listener, opts Options[G]) *Supervisor[T, G] {
	if opts.MaxFailures <= 0 {
		opts.MaxFailures = 5
	}
	if opts.Window <= 0 {
		opts.Window = 5 * time.Minute
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 500 * time.Millisecond
	}
	sctx, stop := context.WithCancel(context.Background())
	s := &Supervisor[T, G]{opts: opts, ln: ln, ctx: sctx, stop: stop, done: make(chan struct{})}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    httpgate.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return sctx },
	}
	return s
}

// Start launches the first guard (ctx bounds it) and serves the listener.
// A first launch that fails is returned as an error, and the listener is
// closed; the supervisor is then unusable.
func (s *Supervisor[T, G]) Start(ctx context.Context) error {
	g, err := s.opts.Launch(ctx, nil)
	if err != nil {
		s.stop()
		_ = s.ln.Close()
		return err
	}
	s.cur.Store(g)
	s.wg.Add(2)
	go func() { // the endpoint: ends at Close (Shutdown)
		defer s.wg.Done()
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Log.Error("endpoint stopped", "err", err)
		}
	}()
	go func() { // the watcher: ends at Close or when it gives up
		defer s.wg.Done()
		s.watch(g)
	}()
	return nil
}

// Current returns the current guard; nil between browsers.
func (s *Supervisor[T, G]) Current() G { return s.cur.Load() }

// Done is closed when the supervisor stopped.
func (s *Supervisor[T, G]) Done() <-chan struct{} { return s.done }

// Err returns why the supervisor stopped by itself, or nil.
func (s *Supervisor[T, G]) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// ServeHTTP hands requests to the current guard while it is ready. Between
// browsers only /healthz and /metrics answer; /readyz and everything else
// (CDP, /json/*, /mcp, /read) get 503, so no agent reaches a browser that is
// not fully guarded.
func (s *Supervisor[T, G]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g := G(s.cur.Load()); g.Serving() {
		g.ServeHTTP(w, r)
		return
	}
	if s.opts.Gate.Refuse(w, r) {
		return
	}
	switch r.URL.Path {
	case "/healthz":
		devtoolsjson.WriteText(w, http.StatusOK, "ok")
	case "/metrics":
		s.opts.Metrics.ServeHTTP(w, r)
	case "/readyz":
		devtoolsjson.WriteText(w, http.StatusServiceUnavailable, "not ready: the browser is (re)starting")
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "cdpguard: not ready: the browser is (re)starting; retry shortly", http.StatusServiceUnavailable)
	}
}

// watch relaunches the browser each time the current guard stops by itself.
func (s *Supervisor[T, G]) watch(g G) {
	var failures []time.Time
	var last G // the guard whose browser died, for its policy in force
	for {
		if g != nil {
			select {
			case <-g.Done():
			case <-s.ctx.Done():
				return
			}
			last = g
			s.cur.CompareAndSwap(g, nil)
			s.opts.Log.Error("the browser died; every agent connection was closed; relaunching it", "exit", g.ExitErr())
		}
		now := time.Now()
		failures = append(failures, now)
		for len(failures) > 0 && now.Sub(failures[0]) > s.opts.Window {
			failures = failures[1:]
		}
		if len(failures) > s.opts.MaxFailures {
			s.giveUp(fmt.Errorf("%w: %d failures within %v", s.opts.ErrGaveUp, len(failures), s.opts.Window))
			return
		}
		if !s.sleep(Backoff(s.opts.Backoff, len(failures))) {
			return
		}
		lctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
		next, err := s.opts.Launch(lctx, last)
		cancel()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.opts.Log.Error("relaunching the browser failed", "err", err)
			g = nil
			continue
		}
		if !s.install(next) {
			_ = next.Close()
			return
		}
		if s.opts.Restarts != nil {
			s.opts.Restarts.Inc()
		}
		s.opts.Log.Info("the browser was relaunched; the endpoint is ready again")
		g = next
	}
}

// Backoff is the wait before a relaunch after n failures in the window:
// base doubled n-1 times, at most 30 s.
func Backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// sleep waits d, or until Close; it reports false on Close.
func (s *Supervisor[T, G]) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// install makes g the current guard unless the supervisor is closing.
func (s *Supervisor[T, G]) install(g G) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.cur.Store(g)
	return true
}

func (s *Supervisor[T, G]) giveUp(err error) {
	s.opts.Log.Error("giving up", "err", err)
	s.errMu.Lock()
	s.err = err
	s.errMu.Unlock()
	go func() { _ = s.Close() }() // Close waits for this goroutine's caller
}

// statusGoingAway is the WebSocket close code for a server going down.
const statusGoingAway = 1001

// shutdownDrain bounds how long Close lets in-flight HTTP requests (MCP tool
// calls, /read) finish once the listener is closed.
const shutdownDrain = 2 * time.Second

// Close stops the supervisor within a bound: the endpoint stops accepting
// and reports not ready, every agent is closed with a reason, in-flight HTTP
// requests get shutdownDrain to finish, then the browser is stopped (its
// whole process group). It waits for every goroutine it started.
func (s *Supervisor[T, G]) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		g := G(s.cur.Swap(nil))
		s.mu.Unlock()
		s.stop()
		drained := make(chan struct{})
		go func() { // ends within shutdownDrain
			defer close(drained)
			ctx, cancel := context.WithTimeout(context.Background(), shutdownDrain)
			defer cancel()
			if err := s.srv.Shutdown(ctx); err != nil {
				_ = s.srv.Close()
			}
		}()
		if g != nil {
			g.CloseAgents(statusGoingAway, "cdpguard: shutting down")
		}
		<-drained
		if g != nil {
			g.CloseAgents(statusGoingAway, "cdpguard: shutting down") // those that finished connecting meanwhile
			if err := g.Close(); err != nil {
				s.opts.Log.Warn("stopping the browser", "err", err)
			}
		}
		s.wg.Wait()
		close(s.done)
	})
	<-s.done
	return nil
}
