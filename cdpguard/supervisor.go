package cdpguard

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
	"github.com/cdpguard/cdpguard/internal/metrics"
	"github.com/cdpguard/cdpguard/internal/policyfile"
)

// Supervisor keeps a managed browser guarded for a long-lived service
// (`cdpguard serve`). It owns the endpoint's listener and the current Guard;
// when the browser dies (crash, OOM kill) the guard closes every agent with a
// reason, the endpoint answers 503 (and /readyz "not ready") until a freshly
// launched browser has every layer set up again, and users' next connections
// get fresh contexts. Nothing is relayed while no guard is ready, so nothing
// passes unjudged in between. After too many failures in a window it gives
// up: Done closes and Err says why, so the orchestrator can take over.
//
// A Supervisor is only for browsers it launches: an attached browser is not
// ours to restart, and Attach keeps ending the guard when it goes.
type Supervisor struct {
	cfg     Config
	opts    SupervisorOptions
	log     *slog.Logger
	metrics *metrics.Metrics
	gate    httpgate.Gate // the request checks (Host header, web pages) while no guard is ready
	ln      net.Listener
	srv     *http.Server
	url     string

	cur atomic.Pointer[Guard] // nil between browsers

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

// SupervisorOptions bound the relaunches. The zero value is the default.
type SupervisorOptions struct {
	// MaxFailures browser deaths or failed launches within Window make the
	// supervisor give up. Zero means 5.
	MaxFailures int
	// Window is the period MaxFailures is counted over. Zero means 5 minutes.
	Window time.Duration
	// Backoff is the wait before the first relaunch; it doubles with each
	// failure still in the window, up to 30 s. Zero means 500 ms.
	Backoff time.Duration
}

func (o SupervisorOptions) withDefaults() SupervisorOptions {
	if o.MaxFailures <= 0 {
		o.MaxFailures = 5
	}
	if o.Window <= 0 {
		o.Window = 5 * time.Minute
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	return o
}

// ErrGaveUp is wrapped by Supervisor.Err when the browser failed too often.
var ErrGaveUp = errors.New("cdpguard: the browser failed too often; giving up")

// Supervise launches a managed browser like Launch and keeps it guarded,
// relaunching it when it dies. ctx bounds the first launch only; Close ends
// the supervisor. A first launch that fails is returned as an error.
func Supervise(ctx context.Context, cfg Config, opts SupervisorOptions) (*Supervisor, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	addr := cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: listen on %s: %w", ErrSetup, addr, err)
	}
	sctx, stop := context.WithCancel(context.Background())
	s := &Supervisor{
		cfg: cfg, opts: opts.withDefaults(), log: log,
		gate: httpgate.Gate{PublicHosts: cfg.PublicHosts},
		ln:   ln, url: "http://" + ln.Addr().String(),
		ctx: sctx, stop: stop, done: make(chan struct{}),
	}
	s.metrics = newMetrics(s.cur.Load)
	g, err := launchGuard(ctx, cfg, launchOptions{endpoint: ln.Addr().String(), metrics: s.metrics})
	if err != nil {
		stop()
		_ = ln.Close()
		return nil, err
	}
	s.cur.Store(g)
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return sctx },
	}
	s.wg.Add(2)
	go func() { // the endpoint: ends at Close (Shutdown)
		defer s.wg.Done()
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("endpoint stopped", "err", err)
		}
	}()
	go func() { // the watcher: ends at Close or when it gives up
		defer s.wg.Done()
		s.watch(g)
	}()
	return s, nil
}

// URL returns the endpoint's base URL; it stays the same across relaunches.
func (s *Supervisor) URL() string { return s.url }

// Ready reports whether a guarded browser serves the endpoint now.
func (s *Supervisor) Ready() bool { return s.cur.Load().serving() }

// ReloadPolicy reads the policy file again in the current guard (SIGHUP);
// a guard launched later reads it anyway. See Guard.ReloadPolicy.
func (s *Supervisor) ReloadPolicy() error {
	g := s.cur.Load()
	if g == nil {
		return fmt.Errorf("%w: no browser is guarded right now; the next one reads the file at start", ErrPolicyFile)
	}
	return g.ReloadPolicy()
}

// Done is closed when the supervisor stopped: after Close, or after it gave
// up relaunching (then Err is not nil).
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Err returns why the supervisor stopped by itself, or nil.
func (s *Supervisor) Err() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// ServeHTTP hands requests to the current guard while it is ready. Between
// browsers only /healthz and /metrics answer; /readyz and everything else
// (CDP, /json/*, /mcp, /read) get 503, so no agent reaches a browser that is
// not fully guarded.
func (s *Supervisor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g := s.cur.Load(); g.serving() {
		g.ServeHTTP(w, r)
		return
	}
	if s.gate.Refuse(w, r) {
		return
	}
	switch r.URL.Path {
	case "/healthz":
		devtoolsjson.WriteText(w, http.StatusOK, "ok")
	case "/metrics":
		s.metrics.Handler.ServeHTTP(w, r)
	case "/readyz":
		devtoolsjson.WriteText(w, http.StatusServiceUnavailable, "not ready: the browser is (re)starting")
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "cdpguard: not ready: the browser is (re)starting; retry shortly", http.StatusServiceUnavailable)
	}
}

// watch relaunches the browser each time the current guard stops by itself.
func (s *Supervisor) watch(g *Guard) {
	var failures []time.Time
	var lastPolicy *policyfile.Set // the policy in force when the browser died
	for {
		if g != nil {
			select {
			case <-g.Done():
			case <-s.ctx.Done():
				return
			}
			lastPolicy = g.rules() // as reloaded until the browser died
			s.cur.CompareAndSwap(g, nil)
			s.log.Error("the browser died; every agent connection was closed; relaunching it", "exit", g.proc.ExitErr())
		}
		now := time.Now()
		failures = append(failures, now)
		for len(failures) > 0 && now.Sub(failures[0]) > s.opts.Window {
			failures = failures[1:]
		}
		if len(failures) > s.opts.MaxFailures {
			s.giveUp(fmt.Errorf("%w: %d failures within %v", ErrGaveUp, len(failures), s.opts.Window))
			return
		}
		if !s.sleep(s.backoff(len(failures))) {
			return
		}
		lctx, cancel := context.WithTimeout(s.ctx, 60*time.Second)
		next, err := launchGuard(lctx, s.cfg, launchOptions{endpoint: s.ln.Addr().String(), metrics: s.metrics, lastPolicy: lastPolicy})
		cancel()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.log.Error("relaunching the browser failed", "err", err)
			g = nil
			continue
		}
		if !s.install(next) {
			_ = next.Close()
			return
		}
		s.metrics.BrowserRestarts.Inc()
		s.log.Info("the browser was relaunched; the endpoint is ready again")
		g = next
	}
}

// backoff is the wait before a relaunch after n failures in the window:
// Backoff doubled n-1 times, at most 30 s.
func (s *Supervisor) backoff(n int) time.Duration {
	d := s.opts.Backoff
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// sleep waits d, or until Close; it reports false on Close.
func (s *Supervisor) sleep(d time.Duration) bool {
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
func (s *Supervisor) install(g *Guard) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.cur.Store(g)
	return true
}

func (s *Supervisor) giveUp(err error) {
	s.log.Error("giving up", "err", err)
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
func (s *Supervisor) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		g := s.cur.Swap(nil)
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
			g.closeAgents(statusGoingAway, "cdpguard: shutting down")
		}
		<-drained
		if g != nil {
			g.closeAgents(statusGoingAway, "cdpguard: shutting down") // those that finished connecting meanwhile
			if err := g.Close(); err != nil {
				s.log.Warn("stopping the browser", "err", err)
			}
		}
		s.wg.Wait()
		close(s.done)
	})
	<-s.done
	return nil
}
