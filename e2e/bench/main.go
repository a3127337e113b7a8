// Command bench compares cdpguard with direct Chromium, interleaved, on the
// workloads of issues 2, 3, 5 and 10: page load with 200 subresources from
// loopback (CPU-bound: Chrome's Fetch domain costs the most there), the same
// page with every response delayed by a network round trip (latency-bound,
// as on the real web), Runtime.evaluate round trips, full-page screenshots,
// WebSocket echo,
// 10 users loading at once, and cdpguard's resident memory with idle users.
//
// It must run inside a private network namespace, as the tests do:
//
//	unshare --net bash -c 'ip link set lo up && go run ./e2e/bench'
//
// or scripts/bench.sh, which does exactly that. The timed workloads run
// cdpguard in this process (cdpguard.Launch); the memory workload builds and
// runs the cdpguard binary, whose RSS is then its own.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Every wait in the bench is bounded by one of these.
const (
	opTimeout    = 30 * time.Second // one setup call
	loadTimeout  = 60 * time.Second // one measured iteration
	startTimeout = 60 * time.Second // a browser or guard starting
	closeWait    = 10 * time.Second // a process or server stopping
)

// siteHost is the allowed test host; *.test maps to 127.0.0.1.
const siteHost = "allowed.test"

const noiseWarning = "Figures from a shared 2-core machine are noisy; compare ratios, not absolute times, and rerun before concluding."

type options struct {
	chrome, guardBin, only, cpuprofile string
	jsonOut, verbose                   bool
	rtt                                time.Duration
	latencyPairs                       int
	subresources, evals, wsMessages    int
	users                              int
	loadPairs, evalPairs, shotPairs    int
	wsPairs, usersPairs, profileLoads  int
	tabPairs                           int
	taskRounds                         int
	taskOnly                           string
	memUsers                           []int
	memSettle, timeout                 time.Duration
	soak                               bool
	controls                           bool
	soakFor, soakSample, soakThink     time.Duration
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&o.chrome, "chrome", "", "browser binary (default: $CHROME_PATH, or chromium, chromium-browser, google-chrome on PATH)")
	fs.StringVar(&o.only, "workloads", "load,eval,shot,ws,users,tab,fair,mem,mcp", "comma-separated workloads to run: load, eval, shot, ws, users, tab, fair, mem, mcp, tasks (issue 34's task bench against @playwright/mcp; not in the default)")
	fs.BoolVar(&o.jsonOut, "json", false, "write the report as JSON to stdout instead of the table")
	fs.BoolVar(&o.verbose, "v", false, "log cdpguard at info level to stderr (default: warnings)")
	fs.IntVar(&o.subresources, "subresources", 200, "subresources of the page-load page")
	fs.IntVar(&o.evals, "evals", 1000, "Runtime.evaluate round trips per iteration")
	fs.IntVar(&o.wsMessages, "ws-messages", 1000, "WebSocket echo round trips per iteration")
	fs.IntVar(&o.users, "users", 10, "users loading at once in the users workload")
	fs.IntVar(&o.loadPairs, "load-pairs", 15, "page-load pairs")
	fs.IntVar(&o.latencyPairs, "latency-pairs", 10, "latency-bound page-load pairs")
	fs.DurationVar(&o.rtt, "rtt", 20*time.Millisecond, "delay of every response of the latency-bound page load (a network round trip); it runs with the load workload (0: it does not), or alone with -workloads=latency")
	fs.IntVar(&o.evalPairs, "eval-pairs", 5, "round-trip pairs")
	fs.IntVar(&o.shotPairs, "shot-pairs", 10, "screenshot pairs")
	fs.IntVar(&o.wsPairs, "ws-pairs", 5, "WebSocket echo pairs")
	fs.IntVar(&o.usersPairs, "users-pairs", 5, "multi-user pairs")
	fs.IntVar(&o.tabPairs, "tab-pairs", 10, "new-tab set-up pairs, quiet and with another user flooding")
	fs.IntVar(&o.taskRounds, "task-rounds", 3, "rounds of the task bench (wall time is the median)")
	fs.StringVar(&o.taskOnly, "task-only", "", "comma-separated task keys to run (default: all twelve)")
	mem := fs.String("mem-users", "10,50", "idle user counts at which cdpguard's RSS is read")
	fs.DurationVar(&o.memSettle, "mem-settle", 3*time.Second, "wait before each RSS reading")
	fs.StringVar(&o.guardBin, "guard-bin", "", "cdpguard binary for the memory workload (default: go build ./cmd/cdpguard)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "after the pairs, profile this process (in-process cdpguard) during extra cdpguard page loads and write the CPU profile here")
	fs.IntVar(&o.profileLoads, "profile-loads", 20, "cdpguard page loads profiled with -cpuprofile")
	fs.DurationVar(&o.timeout, "timeout", 15*time.Minute, "bound on the whole run")
	fs.BoolVar(&o.controls, "controls", false, "measure the in-page controls: the baseline column is cdpguard with controls off, the other cdpguard with them on (target 1.03x)")
	fs.BoolVar(&o.soak, "soak", false, "run the soak instead of the comparison: -users agents doing mixed work against the cdpguard binary (soak.go)")
	fs.DurationVar(&o.soakFor, "soak-for", 10*time.Minute, "soak length")
	fs.DurationVar(&o.soakSample, "soak-sample", 10*time.Second, "soak sampling interval")
	fs.DurationVar(&o.soakThink, "soak-think", time.Second, "each soak agent's pause between operations")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, f := range strings.Split(*mem, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return o, fmt.Errorf("-mem-users %q: want comma-separated counts", *mem)
		}
		o.memUsers = append(o.memUsers, n)
	}
	for _, n := range []int{o.subresources, o.evals, o.wsMessages, o.users, o.loadPairs, o.evalPairs, o.shotPairs, o.wsPairs, o.usersPairs, o.taskRounds} {
		if n < 1 {
			return o, errors.New("counts and pairs must be at least 1")
		}
	}
	if o.rtt < 0 || o.rtt > maxDelay || o.latencyPairs < 1 {
		return o, fmt.Errorf("-rtt %s, -latency-pairs %d: want 0 to %s and at least 1 pair", o.rtt, o.latencyPairs, maxDelay)
	}
	// The latency-bound page load is the load workload's other half: on the
	// real web a page waits on the network, where the Fetch domain costs less.
	load, latency := false, false
	for _, w := range strings.Split(o.only, ",") {
		load = load || strings.TrimSpace(w) == "load"
		latency = latency || strings.TrimSpace(w) == "latency"
	}
	if o.rtt > 0 && load && !latency {
		o.only += ",latency"
	}
	return o, nil
}

// findChrome resolves the browser as the e2e tests do.
func findChrome(flagValue string) (string, error) {
	if flagValue == "" {
		flagValue = os.Getenv("CHROME_PATH")
	}
	if flagValue != "" {
		return exec.LookPath(flagValue)
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no chromium, chromium-browser or google-chrome on PATH (use -chrome or CHROME_PATH)")
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	start := time.Now()
	chrome, err := findChrome(o.chrome)
	if err != nil {
		return err
	}
	o.chrome = chrome
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	if o.soak {
		return runSoak(ctx, o)
	}
	selected := map[string]bool{}
	for _, k := range strings.Split(o.only, ",") {
		selected[strings.TrimSpace(k)] = true
	}
	rep := report{Chrome: chromeVersion(ctx, chrome), InProcess: true, NoiseWarning: noiseWarning}
	if err := runTimed(ctx, o, selected, &rep); err != nil {
		return err
	}
	if selected["mem"] {
		fmt.Fprintln(os.Stderr, "memory: cdpguard binary with idle users")
		rep.Memory, err = measureMemory(ctx, o, o.memUsers)
		if err != nil {
			rep.MemoryError = err.Error()
			fmt.Fprintln(os.Stderr, "memory:", err)
		}
	}
	if selected["mcp"] {
		fmt.Fprintln(os.Stderr, "mcp: cdpguard binary's /mcp")
		rep.MCP, err = measureMCP(ctx, o)
		if err != nil {
			rep.MCP.Error = err.Error()
			fmt.Fprintln(os.Stderr, "mcp:", err)
		}
	}
	if selected["tasks"] {
		fmt.Fprintln(os.Stderr, "tasks: @playwright/mcp and cdpguard's /mcp, the same scripted model tasks")
		rep.Tasks, err = measureTasks(ctx, o)
		if err != nil {
			rep.Tasks.Error = err.Error()
			fmt.Fprintln(os.Stderr, "tasks:", err)
		}
	}
	rep.RuntimeSec = time.Since(start).Seconds()
	if o.jsonOut {
		return writeJSON(os.Stdout, rep)
	}
	printTable(os.Stdout, rep)
	return nil
}

// runTimed starts the site, direct Chromium and the in-process guard, and
// runs the selected timed workloads pair by pair.
func runTimed(ctx context.Context, o options, selected map[string]bool, rep *report) error {
	e := &env{opts: o, runID: randomID()}
	var ws []workload
	for _, w := range e.workloads() {
		if selected[w.key] {
			ws = append(ws, w)
		}
	}
	if len(ws) == 0 && o.cpuprofile == "" {
		return nil
	}
	site, err := startSite(siteHost)
	if err != nil {
		return err
	}
	defer site.close()
	e.site = site
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	direct, err := baseline(ctx, o, log)
	if err != nil {
		return err
	}
	defer direct.shutdown()
	guard, err := launchGuard(ctx, o.chrome, log, o.controls)
	if err != nil {
		return err
	}
	defer guard.shutdown()
	if o.controls {
		rep.Baseline = "cdpguard with controls off (-controls): the ratio is what the controls cost"
		for i := range ws {
			ws[i].target = 1.03
		}
	}
	for _, w := range ws {
		fmt.Fprintf(os.Stderr, "%s: %d pairs after %d warm-up\n", w.name, w.pairs, w.warm)
		r, err := runWorkload(ctx, w, direct, guard)
		if err != nil {
			r.Error = err.Error()
			fmt.Fprintf(os.Stderr, "%s: %v\n", w.key, err)
			if ctx.Err() != nil {
				rep.Results = append(rep.Results, r)
				return fmt.Errorf("stopped: %w", ctx.Err())
			}
		}
		rep.Results = append(rep.Results, r)
	}
	if o.cpuprofile != "" {
		if err := profileLoads(ctx, e, guard); err != nil {
			return err
		}
	}
	return nil
}

// baseline is what cdpguard is compared with: direct Chromium, or with
// -controls cdpguard without its controls.
func baseline(ctx context.Context, o options, log *slog.Logger) (*endpoint, error) {
	if !o.controls {
		return launchDirect(ctx, o.chrome)
	}
	ep, err := launchGuard(ctx, o.chrome, log, false)
	if ep != nil {
		ep.name = "controls off"
	}
	return ep, err
}

func runWorkload(ctx context.Context, w workload, direct, guard *endpoint) (result, error) {
	md, cd, err := w.setup(ctx, direct)
	if err != nil {
		return result{Key: w.key, Name: w.name, Target: w.target}, fmt.Errorf("direct setup: %w", err)
	}
	defer cd()
	mg, cg, err := w.setup(ctx, guard)
	if err != nil {
		return result{Key: w.key, Name: w.name, Target: w.target}, fmt.Errorf("cdpguard setup: %w", err)
	}
	defer cg()
	return interleave(ctx, w, md, mg)
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// chromeVersion asks the binary for its version, bounded.
func chromeVersion(ctx context.Context, chrome string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, chrome, "--version").Output()
	if err != nil {
		return chrome
	}
	return strings.TrimSpace(string(out))
}
