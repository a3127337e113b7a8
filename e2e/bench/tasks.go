package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Issue 34's targets for /mcp against @playwright/mcp, task by task and
// in total.
const (
	tasksCharsMax = 0.6 // characters returned to the model
	tasksWallMax  = 1.0 // wall time
)

// taskSide is one task's figures on one server. Characters and calls are
// the last round's (the same every round unless a page raced), wall time
// the median of the rounds.
type taskSide struct {
	Completed  bool      `json:"completed"` // every round reached the goal
	Passed     int       `json:"roundsPassed"`
	Chars      int       `json:"chars"`
	ImageChars int       `json:"imageBase64Chars"`
	Calls      int       `json:"calls"`
	WallMs     float64   `json:"wallMedianMs"`
	Walls      []float64 `json:"wallMs"`
	Failure    string    `json:"failure,omitzero"` // the last failed round's reason
}

type taskResult struct {
	Key        string   `json:"key"`
	Name       string   `json:"name"`
	Playwright taskSide `json:"playwrightMcp"`
	Guard      taskSide `json:"cdpguardMcp"`
	CharsRatio float64  `json:"charsRatio"` // /mcp over @playwright/mcp
	WallRatio  float64  `json:"wallRatio"`
}

// tasksReport is the task bench (issue 34): the same scripted model tasks
// through @playwright/mcp and cdpguard's /mcp, interleaved task by task.
type tasksReport struct {
	PlaywrightMCP string       `json:"playwrightMcpVersion"`
	Rounds        int          `json:"rounds"`
	LoadBefore    string       `json:"loadAverageBefore"`
	LoadAfter     string       `json:"loadAverageAfter"`
	Tasks         []taskResult `json:"tasks"`
	Totals        taskResult   `json:"totals"`
	CharsTarget   float64      `json:"charsRatioTarget"`
	WallTarget    float64      `json:"wallRatioTarget"`
	Met           bool         `json:"targetsMet"`
	Error         string       `json:"error,omitzero"`
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func playwrightMCPVersion(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "e2e", "node_modules", "@playwright", "mcp", "package.json"))
	if err != nil {
		return "?"
	}
	var p struct{ Version string }
	if json.Unmarshal(b, &p) != nil {
		return "?"
	}
	return p.Version
}

// measureTasks runs every task o.taskRounds times on both servers,
// alternating which goes first.
func measureTasks(ctx context.Context, o options) (*tasksReport, error) {
	root := repoRoot(ctx)
	rep := &tasksReport{Rounds: o.taskRounds, LoadBefore: loadAverage(), CharsTarget: tasksCharsMax, WallTarget: tasksWallMax,
		PlaywrightMCP: playwrightMCPVersion(root)}
	bin, done, err := daemonBinary(ctx, o)
	if err != nil {
		return rep, err
	}
	defer done()
	site, err := startTaskSite()
	if err != nil {
		return rep, err
	}
	defer site.close()
	pw, err := startPlaywrightMCP(ctx, root, o.chrome, site.base)
	if err != nil {
		return rep, err
	}
	defer pw.stop()
	guard, err := startGuardMCP(ctx, bin, o.chrome)
	if err != nil {
		return rep, err
	}
	defer guard.stop()
	logf := func(string, ...any) {}
	if o.verbose {
		logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	}
	// Warm-up, not counted: @playwright/mcp launches its browser on the
	// first call, /mcp creates the user's context.
	for _, srv := range []*taskServer{pw, guard} {
		r := &taskRun{ctx: ctx, srv: srv}
		if _, err := r.must("browser_navigate", map[string]any{"url": site.url("index.html")}); err != nil {
			return rep, fmt.Errorf("%s warm-up: %w", srv.name, err)
		}
	}
	var tasks []benchTask
	for _, t := range benchTasks() {
		if o.taskOnly == "" || slices.Contains(strings.Split(o.taskOnly, ","), t.key) {
			tasks = append(tasks, t)
		}
	}
	rep.Tasks = make([]taskResult, len(tasks))
	for round := range o.taskRounds {
		for i, t := range tasks {
			res := &rep.Tasks[i]
			res.Key, res.Name = t.key, t.name
			order := []*taskServer{pw, guard}
			if (round+i)%2 == 1 {
				order = []*taskServer{guard, pw}
			}
			for _, srv := range order {
				side := &res.Guard
				if srv.pw {
					side = &res.Playwright
				}
				r := &taskRun{ctx: ctx, srv: srv, log: logf}
				start := time.Now()
				err := t.run(r, site)
				d := wall(start)
				side.Walls = append(side.Walls, d)
				side.Chars, side.ImageChars, side.Calls = r.chars, r.imageChars, r.calls
				if err == nil {
					side.Passed++
				} else {
					side.Failure = err.Error()
				}
				fmt.Fprintf(os.Stderr, "  tasks round %d %-8s %-16s %6.0f ms %6d chars %2d calls %s\n", round+1, t.key, srv.name, d, r.chars, r.calls, okOr(err))
				if ctx.Err() != nil {
					return rep, fmt.Errorf("stopped: %w", ctx.Err())
				}
				if err != nil && !errors.Is(err, errNotDone) {
					// A failed step may leave a dialog or a tab: start the
					// next task on a clean page.
					r.reset(site)
				}
			}
		}
	}
	rep.LoadAfter = loadAverage()
	rep.Met = true
	tot := &rep.Totals
	tot.Key, tot.Name = "total", "all tasks"
	tot.Playwright.Completed, tot.Guard.Completed = true, true
	for i := range rep.Tasks {
		t := &rep.Tasks[i]
		for _, s := range []*taskSide{&t.Playwright, &t.Guard} {
			s.Completed = s.Passed == o.taskRounds
			s.WallMs = median(s.Walls)
		}
		t.CharsRatio = float64(t.Guard.Chars) / float64(max(t.Playwright.Chars, 1))
		t.WallRatio = t.Guard.WallMs / max(t.Playwright.WallMs, 1)
		for _, p := range [][2]*taskSide{{&tot.Playwright, &t.Playwright}, {&tot.Guard, &t.Guard}} {
			p[0].Chars += p[1].Chars
			p[0].ImageChars += p[1].ImageChars
			p[0].Calls += p[1].Calls
			p[0].WallMs += p[1].WallMs
			if p[1].Completed {
				p[0].Passed++
			}
		}
		tot.Guard.Completed = tot.Guard.Completed && t.Guard.Completed
		tot.Playwright.Completed = tot.Playwright.Completed && t.Playwright.Completed
	}
	tot.CharsRatio = float64(tot.Guard.Chars) / float64(max(tot.Playwright.Chars, 1))
	tot.WallRatio = tot.Guard.WallMs / max(tot.Playwright.WallMs, 1)
	rep.Met = tot.Guard.Completed && tot.CharsRatio <= tasksCharsMax && tot.WallRatio <= tasksWallMax
	return rep, nil
}

func okOr(err error) string {
	if err == nil {
		return "ok"
	}
	return "FAILED: " + oneLine(err.Error())
}

// reset brings a server back to one tab on a blank page after a task that
// broke off: a dialog is dismissed, extra tabs closed (errors ignored: the
// next task reports its own).
func (r *taskRun) reset(site *taskSite) {
	_, _, _ = r.call("browser_handle_dialog", map[string]any{"accept": false})
	for range 4 {
		out, _, err := r.call("browser_tabs", map[string]any{"action": "list"})
		if err != nil || strings.Count(out, "/tasks/")+strings.Count(out, "about:blank") <= 1 {
			break
		}
		_, _, _ = r.call("browser_tabs", map[string]any{"action": "close"})
	}
	_, _, _ = r.call("browser_navigate", map[string]any{"url": site.url("index.html")})
}

func printTasks(w io.Writer, r *tasksReport) {
	if r == nil {
		return
	}
	fmt.Fprintf(w, "\nTask bench (issue 34): @playwright/mcp %s vs cdpguard /mcp, %d rounds, load average %s -> %s\n", r.PlaywrightMCP, r.Rounds, r.LoadBefore, r.LoadAfter)
	if r.Error != "" {
		fmt.Fprintf(w, "ERROR: %s\n", oneLine(r.Error))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "task\tpw done\tpw chars\tpw calls\tpw ms\t/mcp done\t/mcp chars\t/mcp calls\t/mcp ms\tchars ratio\twall ratio\t")
	for _, t := range append(r.Tasks, r.Totals) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%s\t%d\t%d\t%.0f\t%.2fx\t%.2fx\t\n", t.Key,
			done(t.Playwright, r.Rounds, t.Key == "total"), t.Playwright.Chars, t.Playwright.Calls, t.Playwright.WallMs,
			done(t.Guard, r.Rounds, t.Key == "total"), t.Guard.Chars, t.Guard.Calls, t.Guard.WallMs, t.CharsRatio, t.WallRatio)
	}
	_ = tw.Flush()
	for _, t := range r.Tasks {
		for _, s := range []struct {
			name string
			side taskSide
		}{{"@playwright/mcp", t.Playwright}, {"/mcp", t.Guard}} {
			if s.side.Failure != "" {
				fmt.Fprintf(w, "  %s on %s: %s\n", t.Key, s.name, oneLine(s.side.Failure))
			}
		}
	}
	fmt.Fprintf(w, "characters: text of every tool result (images apart: %d / %d base64 characters); wall: median of rounds, summed.\n",
		r.Totals.Playwright.ImageChars, r.Totals.Guard.ImageChars)
	fmt.Fprintf(w, "targets: every task done on /mcp, chars ≤ %.1fx, wall ≤ %.1fx (totals): %s\n", r.CharsTarget, r.WallTarget, yesNo(r.Met))
}

func done(s taskSide, rounds int, total bool) string {
	if total {
		return fmt.Sprintf("%d", s.Passed)
	}
	if s.Completed {
		return "y"
	}
	return fmt.Sprintf("n %d/%d", s.Passed, rounds)
}
