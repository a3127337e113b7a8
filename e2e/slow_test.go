package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// timedSlowConsumer: an agent that stops reading its socket while its page
// streams console events (~0.8 MB/s) is cut off once a write to it stalls for
// AgentWriteTimeout (3 s here; 10 s by default), and meanwhile a second
// agent's Runtime.evaluate round trips stay within 2x (+2 ms) of their
// median without a stall (the slowest of: no stream, the same stream going
// to an agent that read it, and once the stalled agent is cut off), and its
// navigations (which wait on the guard's Fetch decisions) still complete.
func timedSlowConsumer(t *testing.T) {
	if directMode() {
		t.Skip("a guard bound: Chrome's own endpoint has no per-client queue")
	}
	h := testhosts.Start(t)
	cfg := guardConfig(t)
	cfg.AgentWriteTimeout = 3 * time.Second
	g := cdptest.StartGuard(t, cfg)
	ws := g.WebSocketURL()

	fast := cdptest.DialUser(t, ws, "fast-user", cdptest.Options{})
	fastSession := rawPage(t, fast)
	id := 1
	sample := func(n int) []time.Duration {
		var out []time.Duration
		for range n {
			id++
			d, err := evalLatency(t, fast, id, fastSession)
			if err != nil {
				t.Fatalf("fast agent: %v", err)
			}
			out = append(out, d)
		}
		return out
	}
	sample(5) // warm up
	idle := median(sample(40))

	// The slow agent reads while it sets up and while the baseline is
	// taken (so the baseline carries the stream's own cost), then never again.
	stall := make(chan struct{})
	slow := cdptest.DialUser(t, ws, "slow-user", cdptest.Options{Inbox: 64, Stall: stall})
	slowSession := rawPage(t, slow)
	if _, err := slow.CallID(10*time.Second, 2, slowSession, "Runtime.enable", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := slow.CallID(10*time.Second, 3, slowSession, "Page.navigate", map[string]any{"url": h.PageURL("/flood.html")}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the stream is flowing
	before := median(sample(40))
	close(stall)

	var during []time.Duration
	navigations := 0
	deadline := time.Now().Add(30 * time.Second)
	for metricValue(t, g.URL(), "cdpguard_agents_cut_off_total") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the agent that does not read was not cut off within 30s (%d round trips meanwhile)", len(during))
		}
		if len(during)%30 == 0 { // decisions keep flowing: a navigation waits on the Fetch judge
			id++
			if _, err := fast.CallID(10*time.Second, id, fastSession, "Page.navigate", map[string]any{"url": h.PageURL("/page.html")}); err != nil {
				t.Errorf("fast agent's navigation during the flood: %v", err)
			}
			navigations++
		}
		during = append(during, sample(10)...)
	}
	if err := drainToClose(slow, 20*time.Second); err != nil {
		t.Error(err)
	}
	after := median(during)
	// A third no-stall median, once the stalled agent is gone: the guard
	// still serves the fast agent, and this baseline is taken under the
	// same outside load as the stalled phase (CI runs other packages
	// beside this one: the soak's ten users came and went during it).
	post := median(sample(40))
	t.Logf("fast agent: median round trip %v idle, %v while the stream's agent read, %v after it stopped reading (%d samples, %d navigations), %v once it was cut off", idle, before, after, len(during), navigations, post)
	// 2x the slowest of the three medians taken without a stall, plus 2 ms
	// of slack: the medians are around a millisecond, and on a shared
	// 2-core machine one scheduling delay is of that order. Two CI runs
	// measured 8.1 ms idle, 1.5 ms before and 7.7 ms after, and 0.9 ms
	// idle, 1.4 ms before and 5.6 ms after, the outside load moving, not
	// the stall (alone: 1.4, 1.1 and 1.1 ms). A stalled agent that stalled
	// the relay would cost far more: every round trip would wait for its
	// 3 s write bound.
	if limit := 2*max(idle, before, post) + 2*time.Millisecond; after > limit {
		t.Errorf("fast agent's median round trip %v after the other agent stopped reading is over %v (2x the slowest of %v idle, %v before and %v after the cut-off, plus 2 ms)", after, limit, idle, before, post)
	}
}

// drainToClose waits for the stalled client c to have stopped reading,
// lets it read what the kernel buffered, and expects the connection to end
// within d.
func drainToClose(c *cdptest.Client, d time.Duration) error {
	select {
	case <-c.Stalled():
	case <-time.After(d):
		return fmt.Errorf("the slow agent's reader did not stop within %v", d)
	}
	c.Resume()
	select {
	case <-c.Done():
		return nil
	case <-time.After(d):
		return fmt.Errorf("slow agent's connection still open %v after it was cut off", d)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
