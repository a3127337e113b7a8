package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/procstat"
)

// soakConfig is one soak run: users agents working for duration, each
// waiting think between operations and reconnecting every opsPerConn
// operations; the guard's and the browser's figures are read every sample.
type soakConfig struct {
	users      int
	duration   time.Duration
	sample     time.Duration
	think      time.Duration
	settle     time.Duration // before the idle and the after-users readings
	drain      time.Duration // extra wait before the after-users reading (see soakPoolDrain)
	opsPerConn int
}

// Bounds a soak must stay within (issue 11): growth compares the largest
// value of the second half of the steady samples with that of the first
// half, so a leak of one goroutine or fd per operation or connection shows
// while the ups and downs of reconnects do not.
const (
	soakGoroutineGrowth = 40 // goroutines
	soakFDGrowth        = 30 // open fds of cdpguard
	soakHeapGrowthMB    = 24 // MB of Go heap in use (or 50%, whichever is larger)
	soakProcBase        = 12 // Chromium processes with no tab (browser, zygotes, GPU, network, storage, ...)
	soakProcPerUser     = 6  // renderers per user with one tab (10-minute soak: at most 5.5): one per site it visits, one a navigation leaves lingering
	soakIdleSeconds     = 3  // --session-idle: contexts of agents that left are disposed, so "after" compares with idle
	soakAfterSlack      = 12 // goroutines or fds above idle once every context is gone
	// soakPoolDrain: the egress proxy keeps idle upstream connections for
	// 90 s, up to 64 per host (internal/egress/proxy.go), each one fd and
	// two goroutines; a run that waits this long after its agents left is
	// held to soakAfterSlack, a shorter one gets room for that pool.
	soakPoolDrain   = 95 * time.Second
	soakPoolPerHost = 64
	// soakAfterWait bounds the wait for the idle sweep once the agents
	// left, past its nominal time (a loaded machine sweeps late).
	soakAfterWait     = 30 * time.Second
	soakMaxErrorShare = 0.02 // failed operations / all operations
	// soakMinSteady is the fewest steady samples a run ends with (three
	// in each half of the growth check).
	soakMinSteady = 6
)

// soakSample is one reading of the guard and its browser.
type soakSample struct {
	At           float64 `json:"atSec"`
	Goroutines   float64 `json:"goroutines"`
	HeapMB       float64 `json:"heapInuseMB"`
	FDs          float64 `json:"openFDs"`
	GuardRSSMB   float64 `json:"guardRSSMB"`
	GuardCPU     float64 `json:"guardCPUSec"`
	ChromeProcs  int     `json:"chromiumProcs"`
	ChromePSSMB  float64 `json:"chromiumPSSMB"`
	ChromeCPU    float64 `json:"chromiumCPUSec"`
	Ops          int64   `json:"ops"`
	Errors       int64   `json:"errors"`
	ActiveAgents float64 `json:"agents"`
	Users        float64 `json:"users"`
}

// soakReport is what a soak prints (and returns to its test).
type soakReport struct {
	Users        int            `json:"users"`
	DurationSec  float64        `json:"durationSec"`
	Idle         soakSample     `json:"idle"`
	Samples      []soakSample   `json:"samples"`
	After        soakSample     `json:"afterUsersLeft"`
	Ops          map[string]int `json:"ops"`
	Errors       []string       `json:"errors,omitempty"`
	Skipped      []string       `json:"skipped,omitempty"`
	ForbiddenHit int64          `json:"forbiddenHits"`
	Failures     []string       `json:"failures,omitempty"`
	Drained      bool           `json:"drained"`
}

// soakOp is one kind of operation an agent does on its tab.
type soakOp struct {
	name string
	run  func(ctx context.Context, p *page, n int, user string) error
}

// soak is one run in progress.
type soak struct {
	cfg       soakConfig
	site      *site
	forbidden string // http://evil.test:PORT/
	guard     *guardBinary
	ops       []soakOp
	mu        sync.Mutex
	counts    map[string]int
	errs      []string
	nOps      atomic.Int64
	nErrs     atomic.Int64
}

// soakOps lists the operations in the order each agent cycles through them
// (each agent starts at another one). They are what an agent does through
// CDP: navigate (a 20-subresource page, a blank page, a forbidden host that
// gets the explanation page), read the page, take a screenshot.
//
// Guard.read runs when the guard answers it. The "mcp" op opens an MCP
// session (the official SDK's streamable client with the agent's user
// header, so the tools work in the agent's own context), navigates and
// reads through the tools, and closes the session: MCP sessions come and go
// as LibreChat's do.
func (s *soak) soakOps(hasRead bool) []soakOp {
	ops := []soakOp{
		{"navigate", func(ctx context.Context, p *page, n int, _ string) error {
			_, err := p.load(ctx, s.site.loadURL(fmt.Sprintf("soak-%d", n), 20))
			return err
		}},
		{"evaluate", func(ctx context.Context, p *page, _ int, _ string) error {
			var v string
			return p.eval(ctx, `document.title + " " + document.body.innerText.length`, &v)
		}},
		{"blocked", func(ctx context.Context, p *page, n int, _ string) error {
			_, err := p.load(ctx, fmt.Sprintf("%ssoak/%d", s.forbidden, n))
			return err
		}},
		{"blank", func(ctx context.Context, p *page, _ int, _ string) error {
			_, err := p.load(ctx, s.site.base+"/blank")
			return err
		}},
		{"screenshot", func(ctx context.Context, p *page, _ int, _ string) error {
			_, err := p.c.Call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "jpeg", "quality": 60})
			return err
		}},
	}
	if hasRead {
		ops = append(ops, soakOp{"read", func(ctx context.Context, p *page, _ int, _ string) error {
			_, err := p.c.Call(ctx, p.session, "Guard.read", map[string]any{"maxChars": 4000})
			return err
		}}, soakOp{"mcp", func(ctx context.Context, _ *page, n int, user string) error {
			ms, err := mcpSession(ctx, s.guard.url, user) // the agent's own user and context
			if err != nil {
				return fmt.Errorf("mcp session: %w", err)
			}
			defer func() { _ = ms.Close() }()
			if _, err := mcpCall(ctx, ms, "browser_navigate", map[string]any{"url": s.site.loadURL(fmt.Sprintf("soak-mcp-%d", n), 5)}); err != nil {
				return err
			}
			_, err = mcpCall(ctx, ms, "browser_read", map[string]any{})
			return err
		}})
	}
	return ops
}

// runSoak builds and starts `cdpguard serve`, runs the soak and prints
// its figures; it fails when a bound is broken.
func runSoak(ctx context.Context, o options) error {
	cfg := soakConfig{users: o.users, duration: o.soakFor, sample: o.soakSample, think: o.soakThink, settle: 3 * time.Second, opsPerConn: 20}
	if o.soakFor >= 5*time.Minute {
		cfg.drain = soakPoolDrain
	}
	rep, err := soakRun(ctx, o, cfg)
	if rep != nil {
		if o.jsonOut {
			b, err := jsonv2.Marshal(rep)
			if err != nil {
				return fmt.Errorf("encode soak report: %w", err)
			}
			if _, err := os.Stdout.Write(append(b, '\n')); err != nil {
				return err
			}
		} else {
			printSoak(os.Stdout, rep)
		}
	}
	if err != nil {
		return err
	}
	if len(rep.Failures) > 0 {
		return fmt.Errorf("soak: %d bounds broken: %s", len(rep.Failures), strings.Join(rep.Failures, "; "))
	}
	return nil
}

// soakRun does the work of runSoak and returns the report.
func soakRun(ctx context.Context, o options, cfg soakConfig) (*soakReport, error) {
	bin := o.guardBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "cdpguard-soak-bin-")
		if err != nil {
			return nil, fmt.Errorf("temp dir: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		if bin, err = cdptest.BuildDaemon(ctx, dir); err != nil {
			return nil, err
		}
	}
	st, err := startSite(siteHost)
	if err != nil {
		return nil, err
	}
	defer st.close()
	var forbiddenHits atomic.Int64
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("forbidden listener: %w", err)
	}
	fsrv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		forbiddenHits.Add(1)
		_, _ = io.WriteString(w, "FORBIDDEN HOST REACHED")
	})}
	go func() { _ = fsrv.Serve(fl) }()
	defer func() { _ = fsrv.Close() }()

	g, err := startGuardBinary(ctx, bin, o.chrome, "--session-idle", fmt.Sprint(soakIdleSeconds))
	if err != nil {
		return nil, err
	}
	defer g.stop()
	s := &soak{cfg: cfg, site: st, guard: g, counts: map[string]int{},
		forbidden: fmt.Sprintf("http://evil.test:%d/", fl.Addr().(*net.TCPAddr).Port)}
	ep := &endpoint{name: "cdpguard-binary", httpURL: g.url, perUser: true}
	rep := &soakReport{Users: cfg.users, DurationSec: cfg.duration.Seconds(), Ops: s.counts, Drained: cfg.drain >= soakPoolDrain}

	time.Sleep(cfg.settle)
	if rep.Idle, err = s.read(ctx, 0); err != nil {
		return nil, err
	}
	hasRead, why := probeRead(ctx, ep)
	if !hasRead {
		rep.Skipped = append(rep.Skipped, "read: "+why)
	}
	s.ops = s.soakOps(hasRead)

	// Every agent connects, opens its tab and runs each operation once
	// before the clock starts, so the ramp-up is not taken for growth: the
	// MCP operation leaves the user an MCP tab (a renderer) that stays with
	// the user's context, and a short run whose first half came before
	// most users' first MCP operation read those renderers as a leak
	// (CI, 2026-12-02: 21 to 32 processes for ten users, bound +10).
	uctx, stopUsers := context.WithCancel(ctx) // the agents run until stopUsers
	defer stopUsers()
	var wg sync.WaitGroup
	ready := make(chan struct{}, cfg.users)
	for i := range cfg.users {
		wg.Go(func() { s.user(uctx, ep, i, ready) })
	}
	rampUp := time.After(2*opTimeout + time.Duration(len(s.ops))*loadTimeout/4)
	for range cfg.users {
		select {
		case <-ready:
		case <-rampUp:
			stopUsers()
			_ = waitAgents(&wg)
			return nil, errors.New("soak: agents did not open their tabs and run each operation once within their bound")
		}
	}
	start := time.Now()
	// The run lasts cfg.duration and then until every operation has
	// completed at least once (a loaded machine may not have reached the
	// slow ones yet) and the steady part holds soakMinSteady samples (a
	// loaded machine samples slower, and growth read from two or three
	// samples is the ramp-up), bounded by one more loadTimeout.
	minEnd, hardEnd := time.After(cfg.duration), time.After(cfg.duration+loadTimeout)
	pastMin := false
	tick := time.NewTicker(cfg.sample)
	for done := false; !done; {
		select {
		case <-minEnd:
			pastMin = true
			if s.everyOpRan() && steadySamples(rep, time.Since(start)) >= soakMinSteady {
				stopUsers()
			}
		case <-hardEnd:
			stopUsers()
		case <-tick.C:
			if pastMin && s.everyOpRan() && steadySamples(rep, time.Since(start)) >= soakMinSteady {
				stopUsers()
			}
			smp, err := s.read(ctx, time.Since(start).Seconds())
			if err != nil {
				s.fail("sample: " + err.Error())
				continue
			}
			rep.Samples = append(rep.Samples, smp)
			fmt.Fprintf(os.Stderr, "soak %5.0fs: goroutines %4.0f heap %5.1f MB fds %3.0f guard RSS %5.1f MB chromium %2d procs %6.1f MB ops %d errors %d\n",
				smp.At, smp.Goroutines, smp.HeapMB, smp.FDs, smp.GuardRSSMB, smp.ChromeProcs, smp.ChromePSSMB, smp.Ops, smp.Errors)
		case <-uctx.Done():
			done = true
		}
	}
	tick.Stop()
	rep.DurationSec = time.Since(start).Seconds() // cfg.duration, or longer until every operation ran
	if err := waitAgents(&wg); err != nil {
		return rep, err
	}
	if cfg.drain > 0 {
		fmt.Fprintf(os.Stderr, "soak: agents left; waiting %v for idle pools to drain\n", cfg.drain)
	}
	// Contexts disposed, Chromium settled: an MCP user's agent connection
	// lingers a quarter of --session-idle after its last call, then the
	// context idles --session-idle, then the sweeper (every quarter) takes
	// it. The reading is taken once the guard reports no user (polled, so a
	// loaded machine's slower sweep is waited for, bounded), and at the
	// earliest that long after the last agent left.
	time.Sleep(cfg.settle + soakIdleSeconds*time.Second*3/2 + cfg.drain)
	if rep.After, err = s.afterUsers(ctx, start); err != nil {
		return rep, err
	}
	rep.ForbiddenHit = forbiddenHits.Load()
	s.mu.Lock()
	rep.Errors = slices.Clone(s.errs)
	s.mu.Unlock()
	rep.Failures = s.check(rep)
	return rep, nil
}

// steadySamples counts the samples a run ended now would hold to the
// growth bounds (halves: those after its first fifth).
func steadySamples(rep *soakReport, ran time.Duration) int {
	n := 0
	for _, smp := range rep.Samples {
		if smp.At >= ran.Seconds()/5 {
			n++
		}
	}
	return n
}

// everyOpRan reports whether every operation has completed at least once.
func (s *soak) everyOpRan() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range s.ops {
		if s.counts[op.name] == 0 {
			return false
		}
	}
	return true
}

// afterUsers takes the after-users reading once the guard reports no user,
// polling for at most soakAfterWait. When the sweep came late, Chromium is
// given cfg.settle to end the disposed contexts' processes and read again.
func (s *soak) afterUsers(ctx context.Context, start time.Time) (soakSample, error) {
	deadline := time.Now().Add(soakAfterWait)
	for polled := false; ; polled = true {
		smp, err := s.read(ctx, time.Since(start).Seconds())
		switch {
		case err != nil || (smp.Users == 0 && !polled):
			return smp, err
		case smp.Users == 0:
			sleepCtx(ctx, s.cfg.settle)
			return s.read(ctx, time.Since(start).Seconds())
		case time.Now().After(deadline):
			return smp, nil
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// waitAgents waits, bounded, for the agents to return once told to stop.
func waitAgents(wg *sync.WaitGroup) error {
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
		return nil
	case <-time.After(opTimeout + closeWait):
		return errors.New("soak: agents did not stop within their bound")
	}
}

// probeRead reports whether the guard answers Guard.read on a page session.
func probeRead(ctx context.Context, ep *endpoint) (bool, string) {
	p, cleanup, err := onePage(ctx, ep, "soak-probe")
	if err != nil {
		return false, err.Error()
	}
	defer cleanup()
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if _, err := p.c.Call(cctx, p.session, "Guard.read", map[string]any{"maxChars": 100}); err != nil {
		return false, "Guard.read not answered by this build: " + err.Error()
	}
	return true, ""
}

// user is one agent: connect, open a tab, cycle through the operations
// (telling ready once after the first full cycle), reconnect every
// opsPerConn operations, until ctx ends.
func (s *soak) user(ctx context.Context, ep *endpoint, i int, ready chan<- struct{}) {
	name := fmt.Sprintf("soak-user-%d", i)
	for n := i; ctx.Err() == nil; {
		p, cleanup, err := onePage(ctx, ep, name)
		if err != nil {
			s.record("connect", err, ctx)
			sleepCtx(ctx, s.cfg.think)
			continue
		}
		for k := 0; k < s.cfg.opsPerConn && ctx.Err() == nil; k, n = k+1, n+1 {
			if ready != nil && n-i == len(s.ops) { // one full cycle done
				ready <- struct{}{}
				ready = nil
			}
			op := s.ops[n%len(s.ops)]
			octx, cancel := context.WithTimeout(ctx, loadTimeout)
			err := op.run(octx, p, n, name)
			cancel()
			s.record(op.name, err, ctx)
			sleepCtx(ctx, s.cfg.think)
		}
		// Close with a context of its own: the tab must go even at the end.
		cctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		p.close(cctx)
		cancel()
		cleanup()
	}
}

// record counts one operation; errors after the end of the run (the
// operation was cut short) are not the guard's.
func (s *soak) record(name string, err error, ctx context.Context) {
	if err != nil && ctx.Err() != nil {
		return
	}
	s.nOps.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[name]++
	if err != nil {
		s.nErrs.Add(1)
		if len(s.errs) < 20 {
			s.errs = append(s.errs, name+": "+err.Error())
		}
	}
}

func (s *soak) fail(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 20 {
		s.errs = append(s.errs, msg)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// read takes one sample: the guard's own metrics from /metrics and its
// browser's processes from /proc.
func (s *soak) read(ctx context.Context, at float64) (soakSample, error) {
	m, err := scrapeMetrics(ctx, s.guard.url+"/metrics")
	if err != nil {
		return soakSample{}, err
	}
	smp := soakSample{At: at, Goroutines: m["go_goroutines"], HeapMB: m["go_memstats_heap_inuse_bytes"] / (1 << 20),
		FDs: m["process_open_fds"], GuardRSSMB: m["process_resident_memory_bytes"] / (1 << 20),
		GuardCPU: m["process_cpu_seconds_total"], ActiveAgents: m["cdpguard_agent_connections"], Users: m["cdpguard_users"],
		Ops: s.nOps.Load(), Errors: s.nErrs.Load()}
	for _, p := range procstat.Below(s.guard.cmd.Process.Pid) {
		smp.ChromeProcs++
		smp.ChromePSSMB += pssMB(p.PID)
		// Helpers that exited and were reaped by Chromium are counted
		// through their parent's cutime/cstime; what a process that is
		// itself gone used is lost, so this is a lower bound.
		smp.ChromeCPU += p.CPUSeconds()
	}
	return smp, nil
}

// scrapeMetrics reads the unlabelled samples of a Prometheus text page.
func scrapeMetrics(ctx context.Context, u string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "{") {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(f[1], &v); err == nil {
			out[f[0]] = v
		}
	}
	for _, need := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_open_fds", "process_resident_memory_bytes"} {
		if _, ok := out[need]; !ok {
			return nil, fmt.Errorf("metrics: no %s at %s", need, u)
		}
	}
	return out, nil
}
