package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// pssMB is pid's proportional set size (shared pages divided among the
// processes sharing them), so that summing it over Chromium's processes
// does not count shared memory several times.
func pssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// halves returns the steady samples (after the first fifth of the run)
// split in two.
func halves(rep *soakReport) (first, second []soakSample) {
	var steady []soakSample
	for _, s := range rep.Samples {
		if s.At >= rep.DurationSec/5 {
			steady = append(steady, s)
		}
	}
	n := len(steady) / 2
	return steady[:n], steady[n:]
}

func maxOf(ss []soakSample, f func(soakSample) float64) float64 {
	m := 0.0
	for _, s := range ss {
		m = max(m, f(s))
	}
	return m
}

// check compares the samples with the bounds and lists what broke.
func (s *soak) check(rep *soakReport) []string {
	var fails []string
	first, second := halves(rep)
	if len(first) == 0 || len(second) == 0 {
		return []string{fmt.Sprintf("only %d samples: lengthen the run or shorten -soak-sample", len(rep.Samples))}
	}
	growth := func(name string, f func(soakSample) float64, bound float64) {
		a, b := maxOf(first, f), maxOf(second, f)
		if b-a > bound {
			fails = append(fails, fmt.Sprintf("%s grew from %.1f to %.1f (bound +%.0f)", name, a, b, bound))
		}
	}
	// Goroutines follow the operations in flight, as fds follow the pool:
	// a read that waits for a page's scripts (up to 3 s, issue 34) holds
	// its goroutines that much longer, and a 12 s run swung 184 -> 243 ->
	// 189 with nothing left after its agents (CI, 2026-12-07). Bound the
	// growth like the heap's; leaks are the strict check's after the
	// agents left (below).
	gor := func(x soakSample) float64 { return x.Goroutines }
	growth("goroutines", gor, max(soakGoroutineGrowth, maxOf(first, gor)/2))
	// Open fds follow the egress proxy's connection pool, which swings with
	// the machine's load: bound the growth like the heap's, and leave leaks
	// to the strict check after the agents left (below).
	fds := func(x soakSample) float64 { return x.FDs }
	growth("open fds", fds, max(soakFDGrowth, maxOf(first, fds)/2))
	heap := func(x soakSample) float64 { return x.HeapMB }
	growth("heap in use (MB)", heap, max(soakHeapGrowthMB, maxOf(first, heap)/2))
	procs := func(x soakSample) float64 { return float64(x.ChromeProcs) }
	growth("Chromium processes", procs, float64(rep.Users)) // one navigation in flight per user
	if limit := float64(soakProcBase + soakProcPerUser*rep.Users); maxOf(rep.Samples, procs) > limit {
		fails = append(fails, fmt.Sprintf("%.0f Chromium processes, bound %.0f (%d + %d per user)", maxOf(rep.Samples, procs), limit, soakProcBase, soakProcPerUser))
	}
	// Once every agent has left and the idle timeout has disposed every
	// user's context, cdpguard is back to its idle goroutines and fds.
	if rep.After.Users != 0 {
		fails = append(fails, fmt.Sprintf("%.0f users still have a context %.1fs after the last agent left", rep.After.Users, soakIdleSeconds*1.5+soakAfterWait.Seconds()))
	}
	gSlack, fSlack := float64(soakAfterSlack), float64(soakAfterSlack)
	if !rep.Drained { // the proxy's idle upstream pool (one host) may still be there
		gSlack, fSlack = gSlack+2*soakPoolPerHost, fSlack+soakPoolPerHost
	}
	if rep.After.Goroutines > rep.Idle.Goroutines+gSlack {
		fails = append(fails, fmt.Sprintf("%.0f goroutines after every user was disposed, %.0f before any came (bound +%.0f)", rep.After.Goroutines, rep.Idle.Goroutines, gSlack))
	}
	if rep.After.FDs > rep.Idle.FDs+fSlack {
		fails = append(fails, fmt.Sprintf("%.0f open fds after every user was disposed, %.0f before any came (bound +%.0f)", rep.After.FDs, rep.Idle.FDs, fSlack))
	}
	if rep.After.ChromeProcs > rep.Idle.ChromeProcs+2 {
		fails = append(fails, fmt.Sprintf("%d Chromium processes after every user was disposed, %d before any came (bound +2)", rep.After.ChromeProcs, rep.Idle.ChromeProcs))
	}
	total := rep.After.Ops
	if total == 0 {
		fails = append(fails, "no operation completed")
	} else if share := float64(rep.After.Errors) / float64(total); share > soakMaxErrorShare {
		fails = append(fails, fmt.Sprintf("%d of %d operations failed (bound %.0f%%)", rep.After.Errors, total, 100*soakMaxErrorShare))
	}
	if rep.Ops["navigate"] == 0 || rep.Ops["blocked"] == 0 {
		fails = append(fails, "navigations did not run")
	}
	if rep.ForbiddenHit != 0 {
		fails = append(fails, fmt.Sprintf("the forbidden listener was reached %d times", rep.ForbiddenHit))
	}
	return fails
}

// printSoak writes the figures docs/scaling.md quotes.
func printSoak(w io.Writer, rep *soakReport) {
	first, second := halves(rep)
	steady := append(append([]soakSample{}, first...), second...)
	fmt.Fprintf(w, "soak: %d users for %.0fs; operations %v\n", rep.Users, rep.DurationSec, rep.Ops)
	if len(rep.Samples) == 0 {
		fmt.Fprintln(w, "no samples: the run was shorter than -soak-sample or every reading failed")
		for _, e := range rep.Errors {
			fmt.Fprintf(w, "error: %s\n", oneLine(e))
		}
		return
	}
	fmt.Fprintf(w, "%-28s %10s %10s %10s %10s\n", "", "idle", "steady max", "last", "after")
	last := rep.Samples[len(rep.Samples)-1]
	row := func(name string, f func(soakSample) float64) {
		fmt.Fprintf(w, "%-28s %10.1f %10.1f %10.1f %10.1f\n", name, f(rep.Idle), maxOf(steady, f), f(last), f(rep.After))
	}
	row("goroutines", func(x soakSample) float64 { return x.Goroutines })
	row("Go heap in use (MB)", func(x soakSample) float64 { return x.HeapMB })
	row("open fds", func(x soakSample) float64 { return x.FDs })
	row("cdpguard RSS (MB)", func(x soakSample) float64 { return x.GuardRSSMB })
	row("Chromium processes", func(x soakSample) float64 { return float64(x.ChromeProcs) })
	row("Chromium PSS (MB)", func(x soakSample) float64 { return x.ChromePSSMB })
	if len(steady) >= 2 {
		a, b := steady[0], steady[len(steady)-1]
		secs := b.At - a.At
		guard, chrome := (b.GuardCPU-a.GuardCPU)/secs, (b.ChromeCPU-a.ChromeCPU)/secs
		var pss, rss float64
		for _, s := range steady {
			pss += s.ChromePSSMB
			rss += s.GuardRSSMB
		}
		pss, rss = pss/float64(len(steady)), rss/float64(len(steady))
		fmt.Fprintf(w, "CPU while active: cdpguard %.2f cores, Chromium %.2f cores (a lower bound); %.0f millicores per user\n", guard, chrome, 1000*(guard+chrome)/float64(rep.Users))
		fmt.Fprintf(w, "memory while active (mean): cdpguard RSS %.1f MB, Chromium PSS %.1f MB; %.1f MB per user above idle\n", rss, pss,
			(rss+pss-rep.Idle.GuardRSSMB-rep.Idle.ChromePSSMB)/float64(rep.Users))
		fmt.Fprintf(w, "operations: %.1f per second (%d errors)\n", float64(b.Ops-a.Ops)/secs, b.Errors)
	}
	fmt.Fprintf(w, "forbidden listener hits: %d\n", rep.ForbiddenHit)
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "error: %s\n", oneLine(e))
	}
	if !rep.Drained {
		fmt.Fprintf(w, "after: read %.1fs after the last agent left, before the egress proxy's idle pool expires (bounds allow it)\n", soakIdleSeconds*1.5)
	}
	if len(rep.Failures) == 0 {
		fmt.Fprintln(w, "bounds: all held")
	}
	for _, f := range rep.Failures {
		fmt.Fprintf(w, "BOUND BROKEN: %s\n", f)
	}
}
