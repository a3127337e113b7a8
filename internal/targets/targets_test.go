package targets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/users"
)

// fakeBrowser records what the record writes; a method in fail answers
// with an error.
type fakeBrowser struct {
	mu     sync.Mutex
	writes []string // "session method"
	fail   string
	// hold, when set, is a method whose reply waits until hold is closed
	// (a slow browser) or the wait's context ends.
	holdMethod string
	hold       chan struct{}
}

func (b *fakeBrowser) write(session, method string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes = append(b.writes, session+" "+method)
}

func (b *fakeBrowser) Call(_ context.Context, session, method string, _ any) (jsonv2.Value, error) {
	b.write(session, method)
	if method == "Target.getTargets" {
		return jsonv2.Value(`{"targetInfos":[{"targetId":"T1","type":"page"},{"targetId":"W1","type":"worker"}]}`), nil
	}
	return jsonv2.Value(`{"targetInfo":{"targetId":"B","type":"browser"}}`), nil
}

func (b *fakeBrowser) Start(session, method string, _ any) func(context.Context) (jsonv2.Value, error) {
	b.write(session, method)
	return func(ctx context.Context) (jsonv2.Value, error) {
		if method == b.holdMethod {
			select {
			case <-b.hold:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if method == b.fail {
			return nil, errors.New("refused")
		}
		return jsonv2.Value(`{}`), nil
	}
}

func (b *fakeBrowser) Send(session, method string, _ any) error {
	b.write(session, method)
	return nil
}

func (b *fakeBrowser) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.writes)
}

// rig is a record over the real page registry, with every dependency
// recorded; Go and Outbox run at once, on the caller's goroutine.
type rig struct {
	r       *Record
	b       *fakeBrowser
	pages   *pages.Registry
	over    *users.User
	noted   []string // what the observers and agents were told
	evicted []string
	goFn    func(f func()) // runs a setup; nil: at once, on the caller's goroutine
}

// alice owns every target.
type alice struct{}

func (alice) OwnerKey(string) (string, bool) { return "alice", true }

// The rig is the record's Guard, Agents, Life, Outbox, Caps and Crashes.
func (g *rig) OverTabs(string) (*users.User, error) {
	if g.over != nil {
		return g.over, &isolation.CapError{Cap: isolation.CapTabs, Limit: 1, Flag: "--max-tabs-per-user"}
	}
	return nil, nil
}
func (g *rig) PageAttached(t, s string) { g.noted = append(g.noted, "attached "+t+" "+s) }
func (g *rig) WindowOpened()            { g.noted = append(g.noted, "window") }
func (g *rig) NotifyUser(u *users.User, method string, _ []byte) {
	g.noted = append(g.noted, method+" "+u.Key)
}
func (g *rig) Evict(id, reason string) { g.evicted = append(g.evicted, id+": "+reason) }
func (g *rig) Capped(c string)         { g.noted = append(g.noted, "cap "+c) }
func (g *rig) Inc()                    { g.noted = append(g.noted, "crash") }
func (g *rig) Add(f func())            { f() }
func (g *rig) Go(f func()) {
	if g.goFn != nil {
		g.goFn(f)
		return
	}
	f()
}

func newRig(attached bool) *rig {
	g := &rig{b: &fakeBrowser{}, pages: pages.New()}
	g.r = New(Deps{
		Browser: g.b, Pages: g.pages, Ctx: context.Background(),
		Guard: g, Agents: g, Life: g, Outbox: g, Caps: g, Crashes: g,
		Attach: attached,
		Owners: alice{},
		Log:    slog.New(slog.DiscardHandler),
	})
	return g
}

func attached(target, typ string, waiting bool) *cdpmsg.Envelope {
	return &cdpmsg.Envelope{Attached: &cdpmsg.Attached{
		SessionID:          "S-" + target,
		TargetInfo:         cdpmsg.TargetInfo{TargetID: target, Type: typ, URL: "https://a.test/", BrowserContextID: "C"},
		WaitingForDebugger: waiting,
	}}
}

// TestAttachedPage: a page the auto-attach reached is in the registry and
// its observers know it before its setup, whose commands are written
// before the release; its setup is then done.
func TestAttachedPage(t *testing.T) {
	g := newRig(false)
	g.r.Attached(attached("T1", "page", true))
	if got, want := g.b.list(), []string{"S-T1 Page.enable", "S-T1 Runtime.runIfWaitingForDebugger"}; !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	if s := g.pages.SessionOf("T1"); s != "S-T1" || !g.pages.IsPage("T1") {
		t.Fatalf("registry: session %q, page %v", s, g.pages.IsPage("T1"))
	}
	if !slices.Equal(g.noted, []string{"attached T1 S-T1"}) {
		t.Fatalf("observers: %q", g.noted)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := g.pages.AwaitSetup(ctx, "T1"); err != nil {
		t.Fatal(err)
	}
	// Another session's auto-attach (an agent's) and browser sessions are not the guard's.
	e := attached("T2", "page", true)
	e.SessionID = "agent"
	g.r.Attached(e)
	g.r.Attached(attached("B", "browser", false))
	if len(g.b.list()) != 2 || g.pages.IsPage("T2") {
		t.Fatalf("a session not the guard's was set up: %q", g.b.list())
	}
}

// TestAttachMode: in attach mode a page already running gets page-level
// interception first; a page that fails its setup is closed.
func TestAttachMode(t *testing.T) {
	g := newRig(true)
	g.b.fail = "Page.enable"
	g.r.Attached(attached("T1", "page", false))
	want := []string{"S-T1 Fetch.enable", "S-T1 Page.enable", " Target.closeTarget"}
	if got := g.b.list(); !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
}

// TestOverCap: a page past its user's tab cap is closed and released at
// once, never set up or shown to the observers, and the user is told.
func TestOverCap(t *testing.T) {
	g := newRig(false)
	g.over = &users.User{Key: "alice"}
	g.r.Attached(attached("T1", "page", true))
	want := []string{" Target.closeTarget", "S-T1 Runtime.runIfWaitingForDebugger"}
	if got := g.b.list(); !slices.Equal(got, want) {
		t.Fatalf("writes %q, want %q", got, want)
	}
	if !slices.Equal(g.noted, []string{"cap tabs", "Guard.targetRefused alice"}) {
		t.Fatalf("noted %q", g.noted)
	}
	if g.pages.SessionOf("T1") != "" {
		t.Fatal("a closed tab got the guard's session")
	}
}

// TestChangedAndDestroyed: a new page opens a window; a target that
// turns into something other than web content evicts its agents; a
// destroyed target's page ends in the registry.
func TestChangedAndDestroyed(t *testing.T) {
	g := newRig(false)
	g.r.Attached(attached("T1", "page", true))
	info := func(url string) []byte {
		return fmt.Appendf(nil, `{"targetInfo":{"targetId":"T1","type":"page","url":%q,"browserContextId":"C"}}`, url)
	}
	g.r.Changed(&cdpmsg.Envelope{Params: info("https://a.test/")}, true)
	if len(g.evicted) != 0 || !slices.Contains(g.noted, "window") {
		t.Fatalf("created: evicted %q, noted %q", g.evicted, g.noted)
	}
	g.r.Changed(&cdpmsg.Envelope{Params: info("chrome://settings")}, false)
	if len(g.evicted) != 1 || !strings.HasPrefix(g.evicted[0], "T1: ") || !strings.Contains(g.evicted[0], "no longer web content") {
		t.Fatalf("evicted %q", g.evicted)
	}
	if g.pages.NotWeb("T1") == "" {
		t.Fatal("the registry does not know T1 is not web content")
	}
	g.r.Destroyed(&cdpmsg.Envelope{Params: []byte(`{"targetId":"T1"}`)})
	if g.pages.SessionOf("T1") != "" {
		t.Fatalf("destroyed: noted %q", g.noted)
	}
}

// TestCrashed: a crashed tab is closed and counted.
func TestCrashed(t *testing.T) {
	g := newRig(false)
	g.r.Crashed(&cdpmsg.Envelope{Params: []byte(`{"targetId":"T1","status":"crashed"}`)})
	g.r.Crashed(&cdpmsg.Envelope{Params: []byte(`{}`)})
	if got := g.b.list(); !slices.Equal(got, []string{" Target.closeTarget"}) || !slices.Equal(g.noted, []string{"crash"}) {
		t.Fatalf("writes %q, noted %q", got, g.noted)
	}
}

// TestAwaitPages waits for the pages open now, not for other targets, and
// learns the browser's own target.
func TestAwaitPages(t *testing.T) {
	g := newRig(false)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := g.r.AwaitPages(ctx); err == nil {
		t.Fatal("AwaitPages returned before T1's setup")
	}
	g.pages.SetupDone("T1")
	if err := g.r.AwaitPages(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.r.LearnBrowser(context.Background())
	if g.r.BrowserTarget() != "B" {
		t.Fatalf("browser target %q", g.r.BrowserTarget())
	}
}

// signalHandler is a slog handler that reports every warning's message.
type signalHandler struct{ warned chan string }

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		select {
		case h.warned <- r.Message:
		default:
		}
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// slowRig is a rig whose setups run on goroutines of their own (as the
// guard's do), whose browser holds method's reply, and whose bounds are a
// millisecond.
func slowRig(t *testing.T, attach bool, method string) (*rig, chan string) {
	t.Helper()
	g := newRig(attach)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	g.goFn = func(f func()) { wg.Add(1); go func() { defer wg.Done(); f() }() }
	warned := make(chan string, 1)
	g.r.d.Log = slog.New(signalHandler{warned})
	g.b.holdMethod, g.b.hold = method, make(chan struct{})
	g.r.enforceBound, g.r.slowAfter = time.Millisecond, time.Millisecond
	return g, warned
}

func awaitSetup(t *testing.T, g *rig, target string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.pages.AwaitSetup(ctx, target); err != nil {
		t.Fatal(err)
	}
}

// TestSlowPageEnableKeepsTheTab: a Page.enable that answers after the
// slow mark (and after the enforcement bound) is waited for and logged;
// the tab is not closed.
func TestSlowPageEnableKeepsTheTab(t *testing.T) {
	g, warned := slowRig(t, false, "Page.enable")
	g.r.Attached(attached("T1", "page", true))
	select {
	case msg := <-warned:
		if !strings.Contains(msg, "still waiting") {
			t.Fatalf("warning %q", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no slow-setup warning")
	}
	close(g.b.hold)
	awaitSetup(t, g, "T1")
	if slices.Contains(g.b.list(), " Target.closeTarget") {
		t.Fatalf("a slow tab was closed: %q", g.b.list())
	}
}

// TestSetupEndsWithTheTarget: a setup waiting on a Page.enable that never
// answers ends when the target is destroyed, closing nothing.
func TestSetupEndsWithTheTarget(t *testing.T) {
	g, _ := slowRig(t, false, "Page.enable")
	g.r.Attached(attached("T1", "page", true))
	g.r.Destroyed(&cdpmsg.Envelope{Params: []byte(`{"targetId":"T1"}`)})
	awaitSetup(t, g, "T1")
	if slices.Contains(g.b.list(), " Target.closeTarget") {
		t.Fatalf("an ended target was closed: %q", g.b.list())
	}
}

// TestSlowAttachInterceptionCloses: page-level interception in attach
// mode is enforcement: one not in effect within its bound closes the tab.
func TestSlowAttachInterceptionCloses(t *testing.T) {
	g, _ := slowRig(t, true, "Fetch.enable")
	defer close(g.b.hold)
	g.r.Attached(attached("T1", "page", false))
	awaitSetup(t, g, "T1")
	if !slices.Contains(g.b.list(), " Target.closeTarget") {
		t.Fatalf("writes %q, want the tab closed", g.b.list())
	}
}

// TestChangedLoneSurrogate: a tab that turns into something other than web
// content evicts its agents even when its title holds a lone UTF-16
// surrogate, as Chrome writes a page's title cut inside an emoji (a strict
// decode skipped the whole event).
func TestChangedLoneSurrogate(t *testing.T) {
	g := newRig(false)
	g.r.Attached(attached("T1", "page", true))
	g.r.Changed(&cdpmsg.Envelope{Params: []byte(`{"targetInfo":{"targetId":"T1","type":"page","title":"x\ud83d","url":"chrome://settings","browserContextId":"C"}}`)}, false)
	if len(g.evicted) != 1 || !strings.Contains(g.evicted[0], "no longer web content") {
		t.Fatalf("evicted %q", g.evicted)
	}
}
