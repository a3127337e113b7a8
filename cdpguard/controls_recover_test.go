package cdpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/worlds"
)

// TestControlsContextsByUniqueID: across a process swap the new document's
// controls context can have the same small id as the old one; the old
// process's late executionContextDestroyed names that id. Keyed by
// uniqueId, it forgets only the old context, and the page keeps the one it
// pushes its button into.
func TestControlsContextsByUniqueID(t *testing.T) {
	g := &Guard{worlds: worlds.New(worlds.Deps{}), log: slog.New(slog.DiscardHandler)}
	c := &controls{g: g, wake: make(chan struct{}, 1), pages: map[string]*ctlPage{}, sessions: map[string]string{}, dirty: map[string]bool{}}
	c.sessions["S"] = "T"
	c.pages["T"] = &ctlPage{session: "S", worlds: map[int64]string{}, uniq: map[string]int64{}}
	c.contextCreated("S", "T", 4, "old.1")
	c.contextCreated("S", "T", 4, "new.2") // the new process numbers from 1 too
	c.contextDestroyed("S", 4, "old.1")    // late, from the old process
	p := c.pages["T"]
	if p.ctxID != 4 || p.ctxUniq != "new.2" || p.worlds[4] != "T" {
		t.Fatalf("a late destroyed event of the old process took the new context: ctx %d %q, worlds %v", p.ctxID, p.ctxUniq, p.worlds)
	}
	c.contextDestroyed("S", 4, "new.2")
	if p.ctxID != 0 || len(p.worlds) != 0 || len(p.uniq) != 0 {
		t.Fatalf("the new context's own destroyed event left ctx %d, worlds %v, uniq %v", p.ctxID, p.worlds, p.uniq)
	}
	// An executionContextsCleared names no context: it forgets them all,
	// and a committed explanation page then asks Chrome for its world.
	p.explain = &explained{committed: true}
	c.contextCreated("S", "T", 2, "new.3")
	if c.needsRecovery("T", p) != nil {
		t.Error("a second recovery while none is needed")
	}
	p.recover = ctlRecover{}
	c.contextGone("S", func(int64, string) bool { return true })
	if p.ctxID != 0 || !c.dirty["T"] {
		t.Fatalf("cleared: ctx %d, dirty %v", p.ctxID, c.dirty["T"])
	}
	r := c.needsRecovery("T", p)
	if r == nil || c.needsRecovery("T", p) != nil {
		t.Fatal("want exactly one recovery in flight for a committed explanation page without its context")
	}
}

// testControlsLateEventsFreshTab (in TestRecordedGuard) reproduces the
// missing button: a fresh tab's first navigation to a blocked host, where the old renderer's late
// event arrives right after the explanation page's controls context was
// reported (the recorder hands the guard that event). Both kinds: a late
// executionContextDestroyed with the new context's id (another uniqueId),
// and a late executionContextsCleared. The Allow button must appear each
// time; before, nothing was ever pushed into the page.
func testControlsLateEventsFreshTab(t *testing.T, g *Guard, rec *recorder, evilURL string, evilHits *atomic.Int64) {
	var kind atomic.Value
	kind.Store("")
	rec.mu.Lock()
	rec.after = func(msg []byte) [][]byte {
		k := kind.Load().(string)
		if k == "" || !strings.Contains(string(msg), `"Runtime.executionContextCreated"`) || !strings.Contains(string(msg), g.ctl.world) || !strings.Contains(string(msg), "evil.test") {
			return nil
		}
		var e struct {
			SessionID string `json:"sessionId"`
			Params    struct {
				Context struct {
					ID int64 `json:"id"`
				} `json:"context"`
			} `json:"params"`
		}
		if json.Unmarshal(msg, &e) != nil {
			return nil
		}
		kind.Store("")
		if k == "destroyed" {
			return [][]byte{fmt.Appendf(nil, `{"method":"Runtime.executionContextDestroyed","params":{"executionContextId":%d,"executionContextUniqueId":"1.2"},"sessionId":%q}`, e.Params.Context.ID, e.SessionID)}
		}
		return [][]byte{fmt.Appendf(nil, `{"method":"Runtime.executionContextsCleared","params":{},"sessionId":%q}`, e.SessionID)}
	}
	rec.mu.Unlock()
	defer func() {
		rec.mu.Lock()
		rec.after = nil
		rec.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := dialAgent(ctx, t, g)
	for i, k := range []string{"destroyed", "cleared"} {
		kind.Store(k)
		var created struct {
			TargetID string `json:"targetId"`
		}
		if err := a.call(ctx, "", "Target.createTarget", map[string]any{"url": fmt.Sprintf("%s/tab-%d", evilURL, i)}, &created); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if !waitAllowButton(ctx, g, created.TargetID, 8*time.Second) {
			t.Errorf("tab %d (late %s): no Allow button on the explanation page", i, k)
		}
		t.Logf("tab %d: button after %v", i, time.Since(t0))
		if kind.Load().(string) != "" {
			t.Errorf("tab %d: the late %s event was never injected", i, k)
		}
		if err := a.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": created.TargetID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := evilHits.Load(); n > 0 {
		t.Errorf("LEAK: the forbidden listener saw %d requests", n)
	}
}

// waitAllowButton polls (bounded) the page's DOM, through the guard's own
// session, for the Allow button in the controls' shadow root.
func waitAllowButton(ctx context.Context, g *Guard, target string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		g.ctl.mu.Lock()
		var session string
		if p := g.ctl.pages[target]; p != nil {
			session = p.session
		}
		g.ctl.mu.Unlock()
		if session != "" {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			res, err := g.mux.Call(cctx, session, "DOM.getDocument", map[string]any{"depth": -1, "pierce": true})
			cancel()
			if err == nil && strings.Contains(string(res), `"nodeValue":"Allow `) {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// TestRecoveryKeepsTaint: a late executionContextsCleared forgets a
// tainted controls context that may still live; the recovery that finds
// the same world again keeps it tainted (its binding calls refused).
func TestRecoveryKeepsTaint(t *testing.T) {
	g := &Guard{worlds: worlds.New(worlds.Deps{}), log: slog.New(slog.DiscardHandler)}
	c := &controls{g: g, wake: make(chan struct{}, 1), pages: map[string]*ctlPage{}, sessions: map[string]string{}, dirty: map[string]bool{}}
	c.sessions["S"] = "T"
	c.pages["T"] = &ctlPage{session: "S", worlds: map[int64]string{}, uniq: map[string]int64{}}
	c.contextCreated("S", "T", 4, "u.4")
	c.taint.mark("T", []int64{4})
	c.contextGone("S", func(int64, string) bool { return true }) // the late Cleared
	if c.taint.refusal("T", 4) != "" {
		t.Fatal("setup: the Cleared did not forget the taint")
	}
	p := c.pages["T"]
	if !p.recover.tainted[4] {
		t.Fatal("the forgotten tainted context is not remembered for recovery")
	}
	c.frameNavigated("S", "T", "http://a.test/")
	if p.recover.tainted != nil {
		t.Error("a new document kept the old document's taint memory")
	}
}
