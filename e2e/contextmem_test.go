package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/procstat"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestContextMemory measures what one user costs Chromium, to size the
// guard's users and contexts caps (docs/scaling.md, "Users and browser
// contexts"): n users (CDPGUARD_CONTEXT_MEM=n) connect, each making a
// browser context; then each opens an about:blank tab; then each tab
// loads a small page. After each phase it reads the RSS of Chromium's
// browser process and the RSS and PSS summed over its whole process tree.
// A measurement, not a check: it only runs when asked, and logs figures.
func TestContextMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CDPGUARD_CONTEXT_MEM"))
	if n <= 0 {
		t.Skip("a measurement: set CDPGUARD_CONTEXT_MEM=<users> to run it")
	}
	h := testhosts.Start(t)
	cfg := guardConfig(t)
	cfg.MaxUsers, cfg.MaxContexts, cfg.NewUsersPerSecond = -1, -1, -1
	g := cdptest.StartGuard(t, cfg)
	ws := g.WebSocketURL()

	base := settledMemory(t)
	t.Logf("guard up, no user: %s", base)
	clients := make([]*cdptest.Client, n)
	for i := range clients {
		clients[i] = cdptest.DialUser(t, ws, fmt.Sprintf("mem-%d", i), cdptest.Options{Record: true})
		if _, err := clients[i].CallWithin("", "Browser.getVersion", nil, 15*time.Second); err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
	}
	ctxs := settledMemory(t)
	t.Logf("%d users, a context each, no tab: %s; per context %s", n, ctxs, ctxs.per(base, n))
	sessions := make([]string, n)
	for i, c := range clients {
		_, sessions[i] = c.OpenPage(t, "")
	}
	blank := settledMemory(t)
	t.Logf("%d users with an about:blank tab: %s; per context %s", n, blank, blank.per(base, n))
	for i, c := range clients {
		c.Navigate(t, sessions[i], h.PageURL("/page.html"))
	}
	small := settledMemory(t)
	t.Logf("%d users with a small page (page.html): %s; per context %s", n, small, small.per(base, n))
}

// chromeMemory is Chromium's memory in MB: its browser process's RSS, and
// RSS and PSS summed over every process below this test process (the
// browser and its children; the guard runs in this process).
type chromeMemory struct{ browserRSS, treeRSS, treePSS float64 }

func (m chromeMemory) String() string {
	return fmt.Sprintf("browser process RSS %.0f MB, all processes RSS %.0f MB, PSS %.0f MB", m.browserRSS, m.treeRSS, m.treePSS)
}

// per returns the growth from base per one of n, as text.
func (m chromeMemory) per(base chromeMemory, n int) string {
	f := float64(n)
	return fmt.Sprintf("browser process %.2f MB, all RSS %.2f MB, PSS %.2f MB",
		(m.browserRSS-base.browserRSS)/f, (m.treeRSS-base.treeRSS)/f, (m.treePSS-base.treePSS)/f)
}

// settledMemory reads chromeMemory until two reads a second apart are
// within 2% of each other in PSS (at most 30 reads), and returns the last.
func settledMemory(t *testing.T) chromeMemory {
	t.Helper()
	prev := readChromeMemory(t)
	for range 30 {
		time.Sleep(time.Second) // a measurement settling, not a wait for an event
		cur := readChromeMemory(t)
		if d := cur.treePSS - prev.treePSS; d < 0.02*prev.treePSS && -d < 0.02*prev.treePSS {
			return cur
		}
		prev = cur
	}
	return prev
}

func readChromeMemory(t *testing.T) chromeMemory {
	t.Helper()
	var m chromeMemory
	for _, s := range procstat.Below(os.Getpid()) {
		if !s.Live() {
			continue
		}
		rss := procKB(s.PID, "status", "VmRSS:") / 1024
		m.treeRSS += rss
		m.treePSS += procKB(s.PID, "smaps_rollup", "Pss:") / 1024
		if s.PPID == os.Getpid() && rss > m.browserRSS {
			m.browserRSS = rss // the browser process is the test's largest child
		}
	}
	if m.treeRSS == 0 {
		t.Fatal("no Chromium process below the test")
	}
	return m
}

// procKB reads the kB figure after key in /proc/<pid>/<file>; 0 when the
// process is gone.
func procKB(pid int, file, key string) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + file)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				v, _ := strconv.ParseFloat(f[0], 64)
				return v
			}
		}
	}
	return 0
}
