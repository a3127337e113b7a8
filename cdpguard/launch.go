package cdpguard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/cdpguard/cdpguard/internal/browser"
	"github.com/cdpguard/cdpguard/internal/dialogs"
	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/hostmap"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/metrics"
	"github.com/cdpguard/cdpguard/internal/outbox"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/policyfile"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/selfaddr"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Launch starts a managed Chromium over --remote-debugging-pipe, guards it,
// and serves the endpoint. ctx bounds start-up only; Close ends the guard.
func Launch(ctx context.Context, cfg Config) (*Guard, error) {
	return launchGuard(ctx, cfg, launchOptions{})
}

// launchOptions are what a Supervisor gives each guard it launches.
type launchOptions struct {
	endpoint string           // the supervisor's listen address; "" makes the guard listen itself
	metrics  *metrics.Metrics // shared across relaunches; nil makes the guard's own
	// transport, when set, wraps the browser connection (tests count the
	// guard's browser round trips with it).
	transport func(relay.Transport) relay.Transport
	// lastPolicy, when set, is the policy in force in the guard this one
	// replaces (a relaunch): a policy file that does not parse now keeps
	// it, as a reload would, instead of failing the relaunch.
	lastPolicy *policyfile.Set
	// attach is true for a guard of a running browser (Attach): the
	// components are built knowing it.
	attach bool
}

func launchGuard(ctx context.Context, cfg Config, lo launchOptions) (*Guard, error) {
	g, err := newGuardWith(cfg, lo)
	if err != nil {
		return nil, err
	}
	g.ep.supervisor = lo.endpoint
	if err := g.startProxy(); err != nil {
		_ = g.Close()
		return nil, err
	}
	flags := append([]string(nil), cfg.ChromeFlags...)
	guardFlags := egress.ChromeFlags(g.proxyAddr)
	proc, err := browser.Launch(ctx, browser.LaunchOptions{
		Path:        cfg.ChromePath,
		Headed:      cfg.Headed,
		UserDataDir: cfg.UserDataDir,
		Flags:       flags,
		GuardFlags:  guardFlags,
		Stderr:      cfg.ChromeStderr,
		Log:         g.log,
		MaxMessage:  cfg.BrowserMessageBytes,
		OnOversize:  func(kind string) { g.metrics.BrowserOversize.WithLabelValues(kind).Inc() },
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
	g, err := newGuardWith(cfg, launchOptions{attach: true})
	if err != nil {
		return nil, err
	}
	if err := g.startProxy(); err != nil {
		_ = g.Close()
		return nil, err
	}
	conn, v, err := browser.Dial(ctx, browserURL, cfg.BrowserMessageBytes)
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

func newGuard(cfg Config) (*Guard, error) { return newGuardWith(cfg, launchOptions{}) }

// newGuardWith is newGuard, the guard's composition root, for what a
// Supervisor or Attach gives: for a relaunch a policy file that no longer
// parses is logged and lo.lastPolicy kept (nil: the error stops the
// guard). It builds the components in the order they need each other.
func newGuardWith(cfg Config, lo launchOptions) (*Guard, error) {
	lastPolicy := lo.lastPolicy
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
	if n := cfg.BrowserMessageBytes; n != 0 && n < minBrowserMessageBytes {
		return nil, configError("BrowserMessageBytes", strconv.Itoa(n), "want at least 1 MiB (the browser's own answers to the guard's set-up must fit), or zero for 256 MiB")
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
	g.attached = lo.attach
	// The metrics first: every component counts into them. A Supervisor's
	// metrics outlive its guards (their gauges read the current one).
	g.metrics = lo.metrics
	if g.metrics == nil {
		g.metrics = newMetrics(func() *Guard { return g })
	}
	g.fx = outbox.New()
	g.ctx, g.stop = ctx, stop
	g.closed.done = make(chan struct{})
	g.hosts = hosts
	g.ep.self = selfaddr.New()
	g.pages = pages.New()
	g.users = users.New(userContexts{g}, g.pages, cfg.SessionIdle, log)
	g.users.SetLimits(g.userLimits())
	g.dialogs = dialogs.New(g.fx.Sender(muxCaller{g}, log), g.pages, dialogs.GraceOf(cfg.DialogGrace), log)
	// Answers wait for Chrome's reply, so that one refused while the page's
	// navigation is ready to commit can be unstuck
	// (docs/decisions/2026-12-02-beforeunload.md).
	g.dialogs.SetCaller(muxCaller{g})
	g.agents = g.newAgents()
	g.pol = g.newPolicyState(rules, sum)
	g.about.id = hex.EncodeToString(id)
	if g.files, err = g.newFiles(); err != nil {
		stop()
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	g.targets = g.newTargets()
	g.worlds = g.newWorlds()
	g.scopes = g.newScopes()
	g.ctl = g.newControls()
	g.iso = g.newIsolator()
	g.mcp = g.newMCP()
	g.ep.json = g.newDevtoolsJSON()
	g.rd = g.newReader()
	g.ep.routes = g.newRoutes()
	g.rs = g.newRuleStage()
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
	g.judge = fetchdomain.New(g.mux, fetchdomain.Options{
		Rules:               judgeSide{g},
		Shed:                g.metrics.PausesShed,
		ReadLoopSender:      g.fx.Sender(g.mux, g.log),
		ErrorForNavigation:  g.cfg.BlockedNavigation == "error",
		PauseTimeout:        g.cfg.PauseTimeout,
		Logger:              g.log,
		Blocks:              judgeSide{g},
		Latency:             g.metrics,
		BlockServiceWorkers: g.cfg.ServiceWorkers != "guard",
		Grants:              g.scopes,
		Pages:               g.pages,
		Self:                judgeSide{g},
		NetErrors:           g.proxy != nil, // the proxy's failed connections fail as Chrome's network errors
	})
	if g.ctl != nil {
		g.goWaited(g.ctl.Run) // the controls' push loop: ends with the guard
	}
	g.goWaited(func() { g.files.Run(g.ctx, g.mux) }) // the download cap: ends with the guard
	g.goWaited(func() { g.pol.Watch(g.ctx) })        // the policy file's watcher, if any: ends with the guard
	g.goWaited(func() { g.users.Run(g.ctx) })        // the idle-user sweeper: ends with the guard
	g.goWaited(func() { g.fx.Run(g.mux.Done()) })    // the read loop's browser sends: end with the browser connection
	g.goWaited(func() { g.judge.Run(g.ctx) })        // the judge: ends with the guard
	// The read loop: ends when the browser connection does.
	g.goWaited(func() {
		err := g.mux.Run()
		if g.ctx.Err() == nil {
			g.log.Error("browser connection lost; every agent connection was closed", "err", err)
		}
		_ = g.closeAsync()
	})
	if g.proc != nil {
		g.goWaited(func() { // a launched browser that exits ends the guard
			select {
			case <-g.proc.Done():
				_ = g.mux.Close()
			case <-g.ctx.Done():
			}
		})
	}

	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := g.setupBrowserSession(setupCtx); err != nil {
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if err := g.listen(); err != nil {
		return err
	}
	g.ready.Store(true)
	g.mcp.WarnShared(g.log)
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
	g.targets.LearnBrowser(ctx)
	g.scopes.LearnDefaultContext(ctx)
	if g.about.version.Browser == "" {
		if res, err := g.mux.Call(ctx, "", "Browser.getVersion", nil); err == nil {
			g.about.version = browser.ParseVersion(res)
		}
	}
	return g.targets.AwaitPages(ctx)
}

// newIsolator wires per-user isolation (internal/isolation) to the guard:
// the users registry, the guard's browser session for window look-ups, the
// guard's proxy settings for the contexts users create, the browser's own
// target id, and the outbox goroutine for the browser sends an event
// filter decides on (it runs on the read loop and must not send itself).
func (g *Guard) newIsolator() *isolation.Isolator {
	return isolation.New(isolation.Options{
		Users:   g.users,
		Browser: muxCaller{g},
		Scopes:  g.scopes,
		Targets: g.targets,
		Undo: func(parent, child string, waiting bool) {
			g.fx.Add(func() {
				if waiting {
					_ = g.mux.Send(child, "Runtime.runIfWaitingForDebugger", nil)
				}
				_ = g.mux.Send(parent, "Target.detachFromTarget", map[string]any{"sessionId": child})
			})
		},
		MaxTabs:     g.limits().MaxTabs,
		MaxContexts: g.limits().MaxContexts,
		OnCap:       g.metrics.Bounds.Capped,
	})
}
