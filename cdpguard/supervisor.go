package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/cdpguard/cdpguard/internal/httpgate"
	"github.com/cdpguard/cdpguard/internal/metrics"
	"github.com/cdpguard/cdpguard/internal/supervise"
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
	sup     *supervise.Supervisor[supervised, *supervised]
	url     string
	metrics *metrics.Metrics
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
	s := &Supervisor{url: "http://" + ln.Addr().String()}
	s.metrics = newMetrics(s.current)
	s.sup = supervise.New(ln, supervise.Options[*supervised]{
		MaxFailures: opts.MaxFailures, Window: opts.Window, Backoff: opts.Backoff,
		Launch: func(ctx context.Context, last *supervised) (*supervised, error) {
			lo := launchOptions{endpoint: ln.Addr().String(), metrics: s.metrics}
			if last != nil {
				lo.lastPolicy = (*Guard)(last).rules() // as reloaded until the browser died
			}
			g, err := launchGuard(ctx, cfg, lo)
			return (*supervised)(g), err
		},
		Gate:      httpgate.Gate{PublicHosts: cfg.PublicHosts},
		Metrics:   s.metrics.Handler,
		Restarts:  s.metrics.BrowserRestarts,
		ErrGaveUp: ErrGaveUp,
		Log:       log,
	})
	if err := s.sup.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// current returns the current guard; nil between browsers.
func (s *Supervisor) current() *Guard {
	return (*Guard)(s.sup.Current())
}

// URL returns the endpoint's base URL; it stays the same across relaunches.
func (s *Supervisor) URL() string { return s.url }

// Ready reports whether a guarded browser serves the endpoint now.
func (s *Supervisor) Ready() bool { return s.current().serving() }

// ReloadPolicy reads the policy file again in the current guard (SIGHUP);
// a guard launched later reads it anyway. See Guard.ReloadPolicy.
func (s *Supervisor) ReloadPolicy() error {
	g := s.current()
	if g == nil {
		return fmt.Errorf("%w: no browser is guarded right now; the next one reads the file at start", ErrPolicyFile)
	}
	return g.ReloadPolicy()
}

// Done is closed when the supervisor stopped: after Close, or after it gave
// up relaunching (then Err is not nil).
func (s *Supervisor) Done() <-chan struct{} { return s.sup.Done() }

// Err returns why the supervisor stopped by itself, or nil.
func (s *Supervisor) Err() error { return s.sup.Err() }

// ServeHTTP hands requests to the current guard while it is ready. Between
// browsers only /healthz and /metrics answer; /readyz and everything else
// (CDP, /json/*, /mcp, /read) get 503, so no agent reaches a browser that is
// not fully guarded.
func (s *Supervisor) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.sup.ServeHTTP(w, r) }

// Close stops the supervisor within a bound: the endpoint stops accepting
// and reports not ready, every agent is closed with a reason, in-flight HTTP
// requests get a short drain to finish, then the browser is stopped (its
// whole process group). It waits for every goroutine it started.
func (s *Supervisor) Close() error { return s.sup.Close() }

// supervised is a Guard as internal/supervise keeps it.
type supervised Guard

func (g *supervised) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*Guard)(g).ServeHTTP(w, r) }
func (g *supervised) Serving() bool                                    { return (*Guard)(g).serving() }
func (g *supervised) Done() <-chan struct{}                            { return g.closed.done }
func (g *supervised) ExitErr() error                                   { return g.proc.ExitErr() }
func (g *supervised) CloseAgents(code int, reason string)              { g.agents.CloseAll(code, reason) }
func (g *supervised) Close() error                                     { return (*Guard)(g).Close() }
