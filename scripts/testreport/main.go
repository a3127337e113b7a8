// Command testreport reads `go test -json` on stdin and prints what plain
// `go test` would (the output of failing tests as they fail, every package's
// ok/FAIL line), then the slowest tests, and then the package lines again
// last, so that a log's closing lines stay go test's own. It always exits 0
// after its input ends: the exit status of the run is go test's (scripts/
// test.sh uses pipefail). Lines that are not JSON are printed as they come.
//
// It also prints when the longest packages ran, in seconds from the time
// in TESTREPORT_T0 (Unix seconds; scripts/test.sh sets it when it starts)
// or else from the first package's start: a package that starts late was
// held back by the build or the set-up, one that ends late is the run's
// critical path.
//
// A test that logs "suite gate: waited Ns" (e2e's parallel suites wait
// their turn at a gate after go test has resumed them, and go test's
// Elapsed counts that wait) is listed with its elapsed time less the wait.
package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

func main() {
	top := 15
	if len(os.Args) > 1 {
		if _, err := fmt.Sscan(os.Args[1], &top); err != nil {
			top = 15
		}
	}
	var t0 time.Time
	if v, err := strconv.ParseFloat(os.Getenv("TESTREPORT_T0"), 64); err == nil && v > 0 {
		t0 = time.Unix(0, int64(v*1e9))
	}
	report(os.Stdin, os.Stdout, top, t0)
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time        time.Time `json:"Time"`
	Action      string    `json:"Action"`
	Package     string    `json:"Package"`
	Test        string    `json:"Test"`
	Elapsed     float64   `json:"Elapsed"`
	Output      string    `json:"Output"`
	ImportPath  string    `json:"ImportPath"` // build-output and build-fail events
	FailedBuild string    `json:"FailedBuild"`
}

type testKey struct{ pkg, test string }

// timing is one finished test.
type timing struct {
	key     testKey
	elapsed float64
	action  string
}

// span is when one package's test binary ran.
type span struct {
	pkg        string
	start, end time.Time
}

type reporter struct {
	out      io.Writer
	t0       time.Time            // the run's start; zero: the first package's
	started  map[string]time.Time // packages whose binary runs
	spans    []span
	held     map[testKey][]string // output of tests still running
	waited   map[testKey]float64  // seconds a test waited at a gate
	summary  []string             // package result lines, in order
	timings  []timing
	skipped  int
	passed   int
	failed   int
	packages int
}

func report(in io.Reader, out io.Writer, top int, t0 time.Time) {
	r := &reporter{out: out, held: map[testKey][]string{}, waited: map[testKey]float64{}, t0: t0, started: map[string]time.Time{}}
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n') // no length limit: a line is never cut or lost
		if len(line) > 0 {
			var e event
			if line[0] != '{' || jsonv2.Unmarshal(line, &e) != nil {
				_, _ = out.Write(line)
			} else {
				r.event(e)
			}
		}
		if err != nil {
			if err != io.EOF {
				fmt.Fprintf(out, "testreport: reading go test output: %v\n", err)
			}
			break
		}
	}
	r.finish(top)
}

func (r *reporter) event(e event) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		fmt.Fprint(r.out, e.Output)
	case "start":
		r.started[e.Package] = e.Time
	case "output":
		if e.Test != "" {
			r.held[k] = append(r.held[k], e.Output)
			if w, ok := gateWait(e.Output); ok {
				r.waited[k] += w
			}
			return
		}
		if isSummary(e.Output) {
			r.summary = append(r.summary, e.Output)
			return
		}
		if e.Output != "PASS\n" && e.Output != "testing: warning: no tests to run\n" { // plain go test prints neither
			fmt.Fprint(r.out, e.Output)
		}
	case "pass", "fail", "skip":
		if e.Test == "" { // the package ended
			r.packages++
			if at, ok := r.started[e.Package]; ok && !at.IsZero() && !e.Time.IsZero() {
				r.spans = append(r.spans, span{pkg: e.Package, start: at, end: e.Time})
			}
			if e.Action == "fail" {
				r.flushPackage(e.Package) // e.g. a panic or timeout: no test event
			}
			r.dropPackage(e.Package)
			return
		}
		if e.Action == "fail" {
			r.flush(k)
		}
		delete(r.held, k)
		if isSuite(e.Test) {
			r.timings = append(r.timings, timing{key: k, elapsed: e.Elapsed - r.waited[k], action: e.Action})
			switch e.Action {
			case "pass":
				r.passed++
			case "fail":
				r.failed++
			case "skip":
				r.skipped++
			}
		}
	}
}

// gateMark is what a test logs when it waited for a slot (e2e's suite
// gate), before the seconds.
const gateMark = "suite gate: waited "

// gateWait returns the seconds of a "suite gate: waited 12.5s" line.
func gateWait(line string) (float64, bool) {
	_, rest, ok := strings.Cut(line, gateMark)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "s")
	if !ok {
		return 0, false
	}
	w, err := strconv.ParseFloat(num, 64)
	return w, err == nil && w >= 0
}

// isSummary reports whether a package-level line is go test's closing line
// for that package.
func isSummary(s string) bool {
	return strings.HasPrefix(s, "ok  \t") || strings.HasPrefix(s, "FAIL\t") || strings.HasPrefix(s, "?   \t")
}

func (r *reporter) flush(k testKey) {
	for _, l := range r.held[k] {
		fmt.Fprint(r.out, l)
	}
}

func (r *reporter) flushPackage(pkg string) {
	for k := range r.held {
		if k.pkg == pkg {
			r.flush(k)
		}
	}
}

func (r *reporter) dropPackage(pkg string) {
	for k := range r.held {
		if k.pkg == pkg {
			delete(r.held, k)
		}
	}
}

func (r *reporter) finish(top int) {
	t := r.timings
	slices.SortStableFunc(t, func(a, b timing) int { return cmp.Compare(b.elapsed, a.elapsed) })
	if top > len(t) {
		top = len(t)
	}
	fmt.Fprintf(r.out, "\nslowest tests (%d of %d top-level tests: %d passed, %d failed, %d skipped):\n", top, len(t), r.passed, r.failed, r.skipped)
	for _, x := range t[:top] {
		fmt.Fprintf(r.out, "  %8.2fs  %-4s  %s %s\n", x.elapsed, x.action, strings.TrimPrefix(x.key.pkg, "github.com/cdpguard/cdpguard/"), x.key.test)
	}
	r.timeline(3)
	fmt.Fprintln(r.out)
	for _, s := range r.summary {
		fmt.Fprint(r.out, s)
	}
}

// groups are top-level tests that only run suites as their subtests
// (e2e's TestTimed runs the timed suites three at a time): their subtests
// are listed and counted as suites, the group itself is not.
var groups = map[string]bool{"TestTimed": true}

// isSuite reports whether a test is listed in the slowest tests: a
// top-level test, or a direct subtest of a group.
func isSuite(name string) bool {
	parent, rest, nested := strings.Cut(name, "/")
	if !nested {
		return !groups[name]
	}
	return groups[parent] && !strings.Contains(rest, "/")
}

// timeline prints when the n longest packages ran.
func (r *reporter) timeline(n int) {
	if len(r.spans) == 0 {
		return
	}
	t0, from := r.t0, "the start of scripts/test.sh"
	if t0.IsZero() {
		from = "the first package's start"
		t0 = r.spans[0].start
		for _, s := range r.spans {
			if s.start.Before(t0) {
				t0 = s.start
			}
		}
	}
	s := slices.Clone(r.spans)
	slices.SortStableFunc(s, func(a, b span) int { return cmp.Compare(b.end.Sub(b.start), a.end.Sub(a.start)) })
	fmt.Fprintf(r.out, "\nlongest packages (seconds after %s):\n", from)
	for _, x := range s[:min(n, len(s))] {
		fmt.Fprintf(r.out, "  %6.0f → %4.0f  %s\n", x.start.Sub(t0).Seconds(), x.end.Sub(t0).Seconds(), strings.TrimPrefix(x.pkg, "github.com/cdpguard/cdpguard/"))
	}
}
