package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
	tab, cancel := chromedp.NewContext(bctx)
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { cancel(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("closing a tab took more than 10s")
		}
	})
	// As in connect, the tab's first Do must get the tab context itself.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open tab: %v", err)
	}
	return tab
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
