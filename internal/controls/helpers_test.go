package controls

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/runtime"
	cdptarget "github.com/chromedp/cdproto/target"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// fakeAgent is an agent connection with the sessions and targets it was
// told of.
type fakeAgent struct {
	owned   map[string]bool
	targets map[string]string
}

func (a *fakeAgent) Owns(s string) bool { return a.owned[s] }

func (a *fakeAgent) TargetOf(s string) (string, bool) {
	t, ok := a.targets[s]
	return t, ok
}

// fakeWorlds records what the controls report as guard worlds.
type fakeWorlds struct {
	mu   sync.Mutex
	made map[string]map[int64]bool
}

func (w *fakeWorlds) MadeIn(target cdptarget.ID, frameID cdp.FrameID, ctxID runtime.ExecutionContextID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.made == nil {
		w.made = map[string]map[int64]bool{}
	}
	id := int64(ctxID)
	for _, k := range []string{string(target), string(frameID)} {
		if w.made[k] == nil {
			w.made[k] = map[int64]bool{}
		}
		w.made[k][id] = true
	}
}

// noOwners: every page is a human's own.
type noOwners struct{}

func (noOwners) OwnerKey(string) (string, bool) { return "", false }

// nopBrowser answers every command with an empty result.
type nopBrowser struct{}

func (nopBrowser) Call(context.Context, string, string, any) (jsonv2.Value, error) {
	return jsonv2.Value("{}"), nil
}
func (nopBrowser) Send(string, string, any) error { return nil }

// newTest builds controls with one page T on the guard's session S.
func newTest(t *testing.T) *Controls {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := New(ctx, Deps{
		Browser: nopBrowser{},
		Worlds:  &fakeWorlds{},
		Pages:   pages.New(),
		World:   "cdpguard_controls_test",
		Owners:  noOwners{},
		Go:      func(f func()) { f() },
		Log:     slog.New(slog.DiscardHandler),
	})
	setup(c, "T", "S")
	return c
}

// setup attaches page target on the guard's session, as the guard's
// wiring does: the page registry first, then the controls.
func setup(c *Controls, target, session string) {
	c.d.Pages.(*pages.Registry).Attached(target, session)
	c.SetupPage(target, session)
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonv2.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// state returns page target's state (nil when none), read as the controls
// do, under c.mu.
func (c *Controls) state(target string) *page {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rec(target)
}

// isDirty reports whether target's state changed since the last push.
func (c *Controls) isDirty(target string) bool {
	p := c.state(target)
	c.mu.Lock()
	defer c.mu.Unlock()
	return p != nil && p.dirty
}

// count returns how many pages the controls keep state of, and how many
// of them changed since the last push.
func (c *Controls) count() (n, dirty int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs.Range(func(_ *pages.Page, p *page) bool {
		n++
		if p.dirty {
			dirty++
		}
		return true
	})
	return n, dirty
}
