// Package cdpguard puts a domain allowlist around a Chromium browser driven
// over the Chrome DevTools Protocol. A Guard owns one browser connection and
// serves a CDP endpoint that Playwright, Puppeteer and chromedp connect to as
// they would to Chrome, while every request of every target is judged against
// the allowlist.
package cdpguard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/cdpguard/cdpguard/internal/metrics"
	"github.com/cdpguard/cdpguard/internal/policystate"
)

// Guard is a running guard: a guarded browser and its CDP endpoint.
//
// Five groups of its state are embedded (browserSide, netSide, userSide,
// lifecycle, features) so that every feature's code reads their fields as the
// guard's own (g.mux, g.proxy, g.users, g.ctx) while the features move
// out to internal/ packages (issue #22).
type Guard struct {
	cfg     Config
	log     *slog.Logger
	pol     *policystate.State // the policy in force (wire_policy.go)
	metrics *metrics.Metrics

	browserSide // the browser connection and what the guard keeps about it
	netSide     // where agents connect and where pages go out
	userSide    // the users, their isolation and their agent connections
	lifecycle   // ready, the guard's context and goroutines, Close
	features    // the features wired in (wire_*.go), each an internal/ package
}

// URL returns the endpoint's base URL, e.g. http://127.0.0.1:9222: what
// chromium.connectOverCDP, puppeteer.connect({browserURL}) and chromedp's
// remote allocator take.
func (g *Guard) URL() string { return g.ep.url }

// WebSocketURL returns the browser endpoint, ws://host:port/devtools/browser/<id>.
func (g *Guard) WebSocketURL() string {
	return "ws://" + strings.TrimPrefix(g.ep.url, "http://") + "/devtools/browser/" + g.about.id
}

// Done is closed when the guard has stopped, by Close or because the browser
// connection was lost.
func (g *Guard) Done() <-chan struct{} { return g.closed.done }

// Close stops the endpoint, closes every agent connection and, for a launched
// browser, the browser. It waits for every goroutine of the guard.
func (g *Guard) Close() error {
	g.closed.once.Do(func() {
		g.ready.Store(false)
		g.stop()
		g.barrier.Lock() // a barrier: agent handlers check g.ctx under it
		//lint:ignore SA2001 the empty critical section is that barrier
		g.barrier.Unlock()
		g.failHeldPauses()
		var errs []error
		if g.ep.srv != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := g.ep.srv.Shutdown(sctx); err != nil {
				_ = g.ep.srv.Close()
			}
			cancel()
		}
		if g.mux != nil {
			_ = g.mux.Close()
		}
		if g.proxy != nil {
			_ = g.proxy.Close()
		}
		if g.proc != nil {
			if err := g.proc.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if g.dialogs != nil {
			g.dialogs.Close()
		}
		g.wg.Wait()
		g.closed.err = errors.Join(errs...)
		close(g.closed.done)
	})
	<-g.closed.done
	return g.closed.err
}

// failHeldPauses fails every pause the Fetch judge holds, and sends the
// failures the read loop has queued, before Close lets go of the browser
// connection: Chrome lets a held request go out when the intercepting
// connection closes, and in attach mode the browser outlives the guard.
// It waits at most heldPausesBound (a browser that does not read its pipe
// must not hang Close); the sends it leaves then end when the connection
// closes, and Close waits for them (g.wg).
func (g *Guard) failHeldPauses() {
	if g.judge == nil || g.mux == nil {
		return
	}
	done := make(chan struct{})
	g.wg.Add(1)
	go func() { // ends when the failures are sent or the browser connection is gone
		defer g.wg.Done()
		defer close(done)
		g.judge.Stop()
		g.fx.Flush(g.mux.Done())
	}()
	t := time.NewTimer(heldPausesBound)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		g.log.Warn("closing with paused requests not yet failed: the browser did not take the answers in time", "bound", heldPausesBound)
	}
}

// heldPausesBound bounds how long Close waits for the held pauses' failures
// to be sent.
const heldPausesBound = 2 * time.Second

// enter registers a handler or goroutine that Close must wait for (g.wg),
// under g.barrier, Close's barrier; false, registering nothing, once Close
// began. The caller calls g.wg.Done when it ends.
func (l *lifecycle) enter() bool {
	l.barrier.Lock()
	defer l.barrier.Unlock()
	if l.ctx.Err() != nil {
		return false
	}
	l.wg.Add(1)
	return true
}

// guardLife is the guard's life as the components see it: agents enter
// and exit it (admission.Life), goroutines run under it.
type guardLife lifecycle

func (l *guardLife) Ready() bool { return l.ready.Load() }
func (l *guardLife) Enter() bool { return (*lifecycle)(l).enter() }
func (l *guardLife) Exit()       { l.wg.Done() }
func (l *guardLife) Go(f func()) { (*lifecycle)(l).goWaited(f) }

// GoOwned runs f on a goroutine Close waits for, unless the guard is
// closing: l.barrier is Close's barrier, no goroutine starts once Close
// waits for them.
func (l *guardLife) GoOwned(f func()) bool {
	l.barrier.Lock()
	defer l.barrier.Unlock()
	if l.ctx.Err() != nil {
		return false
	}
	l.wg.Add(1)
	go func() { // f's owner is the guard: Close waits for it
		defer l.wg.Done()
		f()
	}()
	return true
}

// spawn runs f(g.ctx) on a goroutine Close waits for; false, without
// running it, once Close began.
func (g *Guard) spawn(f func(ctx context.Context)) bool {
	if !g.enter() {
		return false
	}
	go func() { // ends when f does, which ends with g.ctx
		defer g.wg.Done()
		f(g.ctx)
	}()
	return true
}

// goWaited runs f on a goroutine Close waits for, without asking whether
// Close began (enter does): for goroutines started before the guard is
// handed out (start) or by one Close waits for (the read loop: a target's
// setup, which must mark its end).
func (l *lifecycle) goWaited(f func()) {
	l.wg.Add(1)
	go func() { // ends when f does
		defer l.wg.Done()
		f()
	}()
}

// closeAsync starts Close from inside a goroutine Close waits for.
func (g *Guard) closeAsync() error {
	go func() { _ = g.Close() }()
	return nil
}

var _ io.Closer = (*Guard)(nil)
