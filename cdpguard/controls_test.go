package cdpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

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
		if k == "" || !strings.Contains(string(msg), `"Runtime.executionContextCreated"`) || !strings.Contains(string(msg), g.ctl.World()) || !strings.Contains(string(msg), "evil.test") {
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
		// The late event first (the recorder injects it as it passes the
		// world's creation on, which may follow the button's first
		// appearance on a loaded machine), then the button, which must
		// have outlived it.
		for end := time.Now().Add(8 * time.Second); kind.Load().(string) != "" && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		if kind.Load().(string) != "" {
			t.Errorf("tab %d: the late %s event was never injected", i, k)
		}
		if !waitAllowButton(ctx, g, created.TargetID, 8*time.Second) {
			t.Errorf("tab %d (late %s): no Allow button on the explanation page", i, k)
		}
		t.Logf("tab %d: button after %v", i, time.Since(t0))
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
		if session := g.ctl.Session(target); session != "" {
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
