package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/cdproto/dom"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// connect attaches chromedp to the endpoint at url (http://127.0.0.1:PORT,
// as an agent would) and returns a browser context; new tabs are made from
// it with newTab. Everything is closed when t ends.
func connect(t *testing.T, url string) context.Context {
	t.Helper()
	// The first Do binds the connection's life to its context, so it must
	// get bctx itself; the remote allocator bounds the dial (10 s) and the
	// outer timeout bounds everything else.
	base, cancelBase := context.WithTimeout(context.Background(), 10*time.Minute)
	allocCtx, cancelAlloc := remote.NewAllocator(base, url)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancelBase()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("chromedp connect to %s: %v", url, err)
	}
	return bctx
}

// newTab opens a new tab in the browser of bctx; it is closed when t ends.
func newTab(t *testing.T, bctx context.Context) context.Context {
	t.Helper()
	tab, cancel := openTab(t, bctx)
	t.Cleanup(func() { closeTab(t, cancel) })
	return tab
}

// openTab opens a new tab in the browser of bctx, quiet (quietTab); cancel
// closes it (with closeTab). It fails t if the tab does not open.
func openTab(t *testing.T, bctx context.Context) (context.Context, context.CancelFunc) {
	t.Helper()
	tab, cancel := openClientTab(t, bctx)
	if err := quietTab(tab); err != nil {
		cancel()
		t.Fatalf("open tab: %v", err)
	}
	return tab, cancel
}

// openClientTab opens a new tab as chromedp opens it, with every domain
// chromedp enables (TestClients' chromedp flow: the client as it comes).
func openClientTab(t *testing.T, bctx context.Context) (context.Context, context.CancelFunc) {
	t.Helper()
	tab, cancel := chromedp.NewContext(bctx)
	// As in connect, the tab's first Do must get the tab context itself.
	if err := chromedp.Do(tab); err != nil {
		cancel()
		t.Fatalf("open tab: %v", err)
	}
	return tab, cancel
}

// quietDomains are the domains chromedp enables on every tab it attaches
// to (Log, Network, DOM, CSS) that no test here reads through chromedp:
// none listens to a chromedp event or queries a node (only
// differential_chromedp_test.go and TestClients do, with chromedp as it
// comes). Enabled, each makes Chrome report to the client everything the
// page does in that domain (Network also keeps the response bodies for
// it), through the guard: TestLeaks used about a tenth more CPU with them
// (docs/decisions/2026-12-07-ci-cpu.md). CSS goes before DOM, which it
// needs.
var quietDomains = []cdp.Command[cdp.Empty, cdp.Empty]{css.Disable, dom.Disable, network.Disable, cdplog.Disable}

// quietTab switches quietDomains off on tab. What a test proves does not
// depend on them: the guard's Fetch layer and egress proxy decide what a
// page may reach whatever the agent enabled.
func quietTab(tab context.Context) error {
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	for _, cmd := range quietDomains {
		if _, err := chromedp.Call(ctx, cmd, cdp.Empty{}); err != nil {
			return fmt.Errorf("%s: %w", cmd.Method, err)
		}
	}
	return nil
}

// tabPool lends the tabs of one browser connection to tests, one test at a
// time per tab. A new tab, navigated once and closed, costs Chrome, the
// guard and chromedp about 0.4 CPU-s (a target and its renderer, the
// guard's set-up, chromedp's eleven set-up commands); navigating a tab
// that exists costs about 0.14 (docs/decisions/2026-12-02-ci-time.md,
// "Tabs are the cost"). Use it where a fresh target is not what a test is
// about: a vector's control, a page-driven vector that loads its own page
// first. A test whose subject is a new tab's first navigation uses newTab.
//
// Concurrency: tests may call get from several goroutines; mu guards free
// and all. A tab is lent until its test ends (t.Cleanup) and then goes
// back to free on about:blank; every tab is closed when the pool's owner
// ends.
type tabPool struct {
	bctx context.Context
	mu   sync.Mutex
	free []context.Context
	open map[context.Context]context.CancelFunc // every tab not closed yet
}

// newTabPool returns a pool of bctx's tabs whose tabs close when t ends.
func newTabPool(t *testing.T, bctx context.Context) *tabPool {
	p := &tabPool{bctx: bctx, open: map[context.Context]context.CancelFunc{}}
	t.Cleanup(func() {
		p.mu.Lock()
		open := p.open
		p.open, p.free = nil, nil
		p.mu.Unlock()
		for _, cancel := range open {
			closeTab(t, cancel)
		}
	})
	return p
}

// get lends t a tab that answers an evaluation (a tab a vector broke is
// closed and another taken), or opens a new one.
func (p *tabPool) get(t *testing.T) context.Context {
	t.Helper()
	for {
		p.mu.Lock()
		if len(p.free) == 0 {
			p.mu.Unlock()
			break
		}
		tab := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		p.mu.Unlock()
		if ok, err := evalBool(tab, 2*time.Second, `true`); err == nil && ok {
			p.lend(t, tab)
			return tab
		}
		p.drop(t, tab) // broken (crashed, detached) or too slow to trust
	}
	tab, cancel := openTab(t, p.bctx)
	p.mu.Lock()
	p.open[tab] = cancel
	p.mu.Unlock()
	p.lend(t, tab)
	return tab
}

// drop closes a tab the pool will not lend again at once: tabs left open
// counted against the user's tab cap (32) and a loaded run hit it. The
// pages a lent tab opened (popups) stay open until the suite ends, as they
// did when each test had a tab of its own: a late request from one is
// still seen by the suite's whole-run leak check.
func (p *tabPool) drop(t *testing.T, tab context.Context) {
	p.mu.Lock()
	cancel := p.open[tab]
	delete(p.open, tab)
	p.mu.Unlock()
	if cancel != nil {
		closeTab(t, cancel)
	}
}

// lend gives tab back when t ends, on about:blank: the test's page must
// end with it, as it would with a closed tab (a control page that keeps
// sending would be counted by the next run on the same listener). A tab
// that cannot leave its page is not given back.
func (p *tabPool) lend(t *testing.T, tab context.Context) {
	t.Cleanup(func() {
		if errText, err := navigateNoWait(tab, "about:blank"); err != nil || errText != "" {
			p.drop(t, tab)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.open != nil { // the pool is still open
			p.free = append(p.free, tab)
		}
	})
}

// closeTab cancels a tab's context (chromedp closes the target), bounded.
func closeTab(t *testing.T, cancel context.CancelFunc) {
	done := make(chan struct{})
	go func() { cancel(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("closing a tab took more than 10s")
	}
}

// step runs a with a context bounded by d.
func step[T any](ctx context.Context, d time.Duration, a chromedp.Action[T]) (T, error) {
	sctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return chromedp.Run(sctx, a)
}

// navigateNoWait sends Page.navigate and returns at commit (or failure),
// without waiting for a load event that a vector page may never fire.
func navigateNoWait(ctx context.Context, url string) (errorText string, err error) {
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(sctx, page.Navigate, page.NavigateParams{URL: url})
	return res.ErrorText, err
}

// withGesture makes an evaluation count as a user gesture, so window.open is
// not stopped by the popup blocker.
func withGesture(p *runtime.EvaluateParams) { p.UserGesture = new(true) }

// evalBool evaluates expr once, bounded by d.
func evalBool(ctx context.Context, d time.Duration, expr string, opts ...chromedp.EvaluateOption) (bool, error) {
	return step(ctx, d, chromedp.Evaluate[bool](expr, opts...))
}

// pollTrue evaluates expr every 100 ms until it is true or d passes; errors
// of single evaluations (a navigation in flight) are retried.
func pollTrue(ctx context.Context, d time.Duration, expr string) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		ok, err := evalBool(ctx, 2*time.Second, expr)
		if err == nil && ok {
			return nil
		}
		last = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last == nil {
		last = errors.New("expression stayed false")
	}
	return fmt.Errorf("%q not true after %v: %w", expr, d, last)
}
