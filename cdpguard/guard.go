// Package cdpguard puts a domain allowlist around a Chromium browser driven
// over the Chrome DevTools Protocol. A Guard owns one browser connection and
// serves a CDP endpoint that Playwright, Puppeteer and chromedp connect to as
// they would to Chrome, while every request of every target is judged against
// the allowlist.
package cdpguard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cdpguard/cdpguard/internal/browser"
	"github.com/cdpguard/cdpguard/internal/dialogs"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/hostmap"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/outbox"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/policyfile"
	"github.com/cdpguard/cdpguard/internal/policystate"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/selfaddr"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Guard is a running guard: a guarded browser and its CDP endpoint.
//
// Five groups of its state are embedded (browserSide, netSide, userSide,
// lifecycle, features) so that every feature's code reads their fields as the
// guard's own (g.mux, g.proxy, g.users, g.ctx) while the features move
// out to internal/ packages (issue #22).
type Guard struct {
	cfg     Config
	log     *slog.Logger
	pol     *policystate.State // the policy in force (wire_policy.go)
	metrics *metrics

	browserSide // the browser connection and what the guard keeps about it
	netSide     // where agents connect and where pages go out
	userSide    // the users, their isolation and their agent connections
	lifecycle   // ready, the guard's context and goroutines, Close
	features    // the features wired in (wire_*.go), each an internal/ package
}

type agentState struct {
	user        *users.User
	unshare     func()          // releases the user's fairness share
	iso         *isolation.Conn // the targets this connection holds
	guardEvents atomic.Bool     // Guard.enable was called
	lastTouch   atomic.Int64    // unix seconds of the last activity recorded
}

// touch records the agent's activity for idle disposal, at most once a
// second so that busy agents do not contend on the registry.
func (st *agentState) touch(g *Guard) {
	now := time.Now().Unix()
	if st.lastTouch.Load() != now {
		st.lastTouch.Store(now)
		g.users.Touch(st.user)
	}
}

// Launch starts a managed Chromium over --remote-debugging-pipe, guards it,
// and serves the endpoint. ctx bounds start-up only; Close ends the guard.
func Launch(ctx context.Context, cfg Config) (*Guard, error) {
	return launchGuard(ctx, cfg, launchOptions{})
}

// launchOptions are what a Supervisor gives each guard it launches.
type launchOptions struct {
	endpoint string   // the supervisor's listen address; "" makes the guard listen itself
	metrics  *metrics // shared across relaunches; nil makes the guard's own
	// transport, when set, wraps the browser connection (tests count the
	// guard's browser round trips with it).
	transport func(relay.Transport) relay.Transport
	// lastPolicy, when set, is the policy in force in the guard this one
	// replaces (a relaunch): a policy file that does not parse now keeps
	// it, as a reload would, instead of failing the relaunch.
	lastPolicy *policyfile.Set
}

func launchGuard(ctx context.Context, cfg Config, lo launchOptions) (*Guard, error) {
	g, err := newGuardWith(cfg, lo.lastPolicy)
	if err != nil {
		return nil, err
	}
	g.ep.supervisor = lo.endpoint
	if lo.metrics != nil {
		g.metrics = lo.metrics
	}
	if err := g.startProxy(); err != nil {
		_ = g.Close()
		return nil, err
	}
	flags := append([]string(nil), cfg.ChromeFlags...)
	guardFlags := g.proxyFlags()
	proc, err := browser.Launch(ctx, browser.LaunchOptions{
		Path:        cfg.ChromePath,
		Headed:      cfg.Headed,
		UserDataDir: cfg.UserDataDir,
		Flags:       flags,
		GuardFlags:  guardFlags,
		Stderr:      cfg.ChromeStderr,
		OnOversize:  func(kind string) { g.metrics.browserOversize.WithLabelValues(kind).Inc() },
	})
	if err != nil {
		_ = g.Close()
		return nil, setupError("launch browser", err)
	}
	g.proc = proc
	if v := proc.Version(); v != nil {
		g.about.version = *v
	}
	var conn relay.Transport = proc.Conn()
	if lo.transport != nil {
		conn = lo.transport(conn)
	}
	if err := g.start(ctx, conn); err != nil {
		_ = g.Close()
		return nil, err
	}
	return g, nil
}

// Attach guards a running browser reached at browserURL (http://host:port or
// a ws:// browser URL) and serves the endpoint. Pages that were open before
// are covered by page-level interception before Attach returns.
func Attach(ctx context.Context, browserURL string, cfg Config) (*Guard, error) {
	g, err := newGuard(cfg)
	if err != nil {
		return nil, err
	}
	g.attached = true
	if err := g.startProxy(); err != nil {
		_ = g.Close()
		return nil, err
	}
	conn, v, err := browser.Dial(ctx, browserURL)
	if err != nil {
		_ = g.Close()
		return nil, setupError("attach to "+browserURL, err)
	}
	if v != nil {
		g.about.version = *v
	}
	if err := g.start(ctx, conn); err != nil {
		_ = g.Close()
		return nil, err
	}
	return g, nil
}

func newGuard(cfg Config) (*Guard, error) { return newGuardWith(cfg, nil) }

// newGuardWith is newGuard for a relaunch: a policy file that no longer
// parses is logged and lastPolicy kept (nil: the error stops the guard).
func newGuardWith(cfg Config, lastPolicy *policyfile.Set) (*Guard, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rules, sum, err := loadPolicy(cfg)
	if err != nil && lastPolicy != nil {
		log.Error("policy file refused at relaunch; the policy in force before is kept", "err", err)
		rules, sum, err = lastPolicy, [32]byte{}, nil
	}
	if err != nil {
		return nil, err
	}
	pol := rules.Default().Policy
	hosts, err := hostmap.Parse(cfg.HostMap)
	if err != nil {
		return nil, setupError("", err)
	}
	switch cfg.ServiceWorkers {
	case "", "block", "guard":
	default:
		return nil, configError("ServiceWorkers", cfg.ServiceWorkers, "want block or guard")
	}
	switch cfg.BlockedNavigation {
	case "", "page", "error":
	default:
		return nil, configError("BlockedNavigation", cfg.BlockedNavigation, "want page or error")
	}
	if pol.Empty() {
		log.Warn("the allowlist is empty: every network request will be blocked")
	}
	if pol.AllowAll() {
		log.Warn("the allowlist is \"*\": EVERY HOST IS ALLOWED; cdpguard only isolates and firewalls")
	}
	if cfg.SessionHeader == "" {
		cfg.SessionHeader = DefaultSessionHeader
	}
	if cfg.SessionIdle == 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	ctx, stop := context.WithCancel(context.Background())
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	g := &Guard{cfg: cfg, log: log}
	g.fx = outbox.New()
	g.ctx, g.stop = ctx, stop
	g.closed.done = make(chan struct{})
	g.hosts = hosts
	g.ep.self = selfaddr.New()
	g.agents.m = map[*relay.Agent]*agentState{}
	g.agents.shares = newShares()
	g.pol = g.newPolicyState(rules, sum)
	g.about.id = hex.EncodeToString(id)
	if g.files, err = g.newFiles(); err != nil {
		stop()
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	g.metrics = newMetrics(func() *Guard { return g })
	g.worlds = g.newWorlds()
	g.pages = pages.New()
	g.users = users.New(browserContexts{g}, g.pages, cfg.SessionIdle, log)
	g.scopes = g.newScopes()
	g.iso = g.newIsolator()
	g.agents.mcp = g.newMCP()
	g.ep.json = g.newDevtoolsJSON()
	return g, nil
}

// start sets up the guard's own browser session and then the endpoint. The
// endpoint reports ready only after interception covers every target.
func (g *Guard) start(ctx context.Context, conn relay.Transport) error {
	bus, err := g.eventBus()
	if err != nil {
		return setupError("route browser events", err)
	}
	g.mux = relay.NewMux(conn, g.log, bus.Publish)
	g.rd = g.newReader()
	g.judge = fetchdomain.New(g.mux, fetchdomain.Options{
		Rules:               g.rulesForFrame,
		OnShed:              g.metrics.pausesShed.Inc,
		ReadLoopSender:      g.fx.Sender(g.mux, g.log),
		ErrorForNavigation:  g.cfg.BlockedNavigation == "error",
		PauseTimeout:        g.cfg.PauseTimeout,
		Logger:              g.log,
		OnBlock:             g.onBlock,
		OnAnswer:            g.metrics.decision,
		BlockServiceWorkers: g.cfg.ServiceWorkers != "guard",
		Grants:              g.scopes.ForFrame,
		IsPage:              g.pages.IsPage,
		Self:                g.isSelfHost,
	})
	g.dialogs = dialogs.New(g.fx.Sender(g.mux, g.log), g.pages, dialogGrace(g.cfg.DialogGrace), g.log)
	g.startControls()
	g.runFiles()
	g.wg.Add(6)
	go func() { // the policy file's watcher, if any: ends with the guard
		defer g.wg.Done()
		g.pol.Watch(g.ctx)
	}()
	go func() { // the idle-user sweeper: ends with the guard
		defer g.wg.Done()
		g.users.Run(g.ctx)
	}()
	go func() { // the read loop's browser sends: end with the browser connection
		defer g.wg.Done()
		g.fx.Run(g.mux.Done())
	}()
	go func() { // the read loop: ends when the browser connection does
		defer g.wg.Done()
		err := g.mux.Run()
		if g.ctx.Err() == nil {
			g.log.Error("browser connection lost; every agent connection was closed", "err", err)
		}
		_ = g.closeAsync()
	}()
	go func() { // the judge: ends with the guard
		defer g.wg.Done()
		g.judge.Run(g.ctx)
	}()
	go func() { // a launched browser that exits ends the guard
		defer g.wg.Done()
		if g.proc == nil {
			<-g.ctx.Done()
			return
		}
		select {
		case <-g.proc.Done():
			_ = g.mux.Close()
		case <-g.ctx.Done():
		}
	}()

	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := g.setupBrowserSession(setupCtx); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if err := g.listen(); err != nil {
		return err
	}
	g.ready.Store(true)
	g.agents.mcp.WarnShared(g.log)
	g.log.Info("browser " + g.about.version.Browser + " (" + g.about.version.UserAgent + ")")
	def := g.rules().Default().Policy
	g.log.Info("cdpguard up, allowed origins="+strings.Join(def.Origins(), ";"), "blocked", strings.Join(def.Blocked(), ";"), "groups", strings.Join(g.rules().GroupNames(), ";"), "policyFile", g.cfg.PolicyFile, "endpoint", g.ep.url, "mode", g.mode())
	return nil
}

func (g *Guard) mode() string {
	if g.attached {
		return "attach"
	}
	return "launch"
}

// setupBrowserSession enables browser-level interception and auto-attach on
// the guard's root session, then waits until every existing page is set up.
func (g *Guard) setupBrowserSession(ctx context.Context) error {
	if _, err := g.mux.Call(ctx, "", "Fetch.enable", fetchdomain.EnableParams()); err != nil {
		return fmt.Errorf("enable browser-level interception: %w", err)
	}
	if _, err := g.mux.Call(ctx, "", "Target.setDiscoverTargets", map[string]any{"discover": true}); err != nil {
		return fmt.Errorf("discover targets: %w", err)
	}
	if _, err := g.mux.Call(ctx, "", "Target.setAutoAttach", map[string]any{
		"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true,
	}); err != nil {
		return fmt.Errorf("auto-attach: %w", err)
	}
	g.learnBrowserTarget(ctx)
	g.scopes.LearnDefaultContext(ctx)
	if g.about.version.Browser == "" {
		if res, err := g.mux.Call(ctx, "", "Browser.getVersion", nil); err == nil {
			g.about.version = versionFromCDP(res)
		}
	}
	targets, err := g.targets(ctx)
	if err != nil {
		return err
	}
	for _, t := range targets {
		if t.Type != "page" {
			continue
		}
		if err := g.awaitSetup(ctx, t.TargetID); err != nil {
			return err
		}
	}
	return nil
}

// URL returns the endpoint's base URL, e.g. http://127.0.0.1:9222: what
// chromium.connectOverCDP, puppeteer.connect({browserURL}) and chromedp's
// remote allocator take.
func (g *Guard) URL() string { return g.ep.url }

// WebSocketURL returns the browser endpoint, ws://host:port/devtools/browser/<id>.
func (g *Guard) WebSocketURL() string {
	return "ws://" + strings.TrimPrefix(g.ep.url, "http://") + "/devtools/browser/" + g.about.id
}

// Done is closed when the guard has stopped, by Close or because the browser
// connection was lost.
func (g *Guard) Done() <-chan struct{} { return g.closed.done }

// Close stops the endpoint, closes every agent connection and, for a launched
// browser, the browser. It waits for every goroutine of the guard.
func (g *Guard) Close() error {
	g.closed.once.Do(func() {
		g.ready.Store(false)
		g.stop()
		g.agents.mu.Lock() // a barrier: agent handlers check g.ctx under it
		//lint:ignore SA2001 the empty critical section is that barrier
		g.agents.mu.Unlock()
		g.failHeldPauses()
		var errs []error
		if g.ep.srv != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := g.ep.srv.Shutdown(sctx); err != nil {
				_ = g.ep.srv.Close()
			}
			cancel()
		}
		if g.mux != nil {
			_ = g.mux.Close()
		}
		if g.proxy != nil {
			_ = g.proxy.Close()
		}
		if g.proc != nil {
			if err := g.proc.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if g.dialogs != nil {
			g.dialogs.Close()
		}
		g.wg.Wait()
		g.closed.err = errors.Join(errs...)
		close(g.closed.done)
	})
	<-g.closed.done
	return g.closed.err
}

// failHeldPauses fails every pause the Fetch judge holds, and sends the
// failures the read loop has queued, before Close lets go of the browser
// connection: Chrome lets a held request go out when the intercepting
// connection closes, and in attach mode the browser outlives the guard.
// It waits at most heldPausesBound (a browser that does not read its pipe
// must not hang Close); the sends it leaves then end when the connection
// closes, and Close waits for them (g.wg).
func (g *Guard) failHeldPauses() {
	if g.judge == nil || g.mux == nil {
		return
	}
	done := make(chan struct{})
	g.wg.Add(1)
	go func() { // ends when the failures are sent or the browser connection is gone
		defer g.wg.Done()
		defer close(done)
		g.judge.Stop()
		g.fx.Flush(g.mux.Done())
	}()
	t := time.NewTimer(heldPausesBound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		g.log.Warn("closing with paused requests not yet failed: the browser did not take the answers in time", "bound", heldPausesBound)
	}
}

// heldPausesBound bounds how long Close waits for the held pauses' failures
// to be sent.
const heldPausesBound = 2 * time.Second

// enter registers a handler or goroutine that Close must wait for (g.wg),
// under agents.mu, Close's barrier; false, registering nothing, once Close
// began. The caller calls g.wg.Done when it ends.
func (g *Guard) enter() bool {
	g.agents.mu.Lock()
	defer g.agents.mu.Unlock()
	if g.ctx.Err() != nil {
		return false
	}
	g.wg.Add(1)
	return true
}

// spawn runs f(g.ctx) on a goroutine Close waits for; false, without
// running it, once Close began.
func (g *Guard) spawn(f func(ctx context.Context)) bool {
	if !g.enter() {
		return false
	}
	go func() { // ends when f does, which ends with g.ctx
		defer g.wg.Done()
		f(g.ctx)
	}()
	return true
}

// closeAsync starts Close from inside a goroutine Close waits for.
func (g *Guard) closeAsync() error {
	go func() { _ = g.Close() }()
	return nil
}

var _ io.Closer = (*Guard)(nil)
