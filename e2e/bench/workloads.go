package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// measureFunc runs iteration i on one side and returns its time in ms.
type measureFunc func(ctx context.Context, i int) (float64, error)

// workload is one timed comparison. setup prepares a side (on an endpoint)
// and returns its measure func and a cleanup.
type workload struct {
	key    string // flag name
	name   string // table label
	target float64
	pairs  int
	warm   int
	setup  func(ctx context.Context, ep *endpoint) (measureFunc, func(), error)
}

// env is what the workloads share.
type env struct {
	site  *site
	opts  options
	runID string
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// onePage connects one user and opens one page; cleanup closes both.
func onePage(ctx context.Context, ep *endpoint, user string) (*page, func(), error) {
	s, err := ep.connect(ctx, user)
	if err != nil {
		return nil, nil, err
	}
	p, err := openPage(ctx, s.c, s.contextID)
	if err != nil {
		s.c.Close()
		return nil, nil, err
	}
	return p, func() { p.close(ctx); s.c.Close() }, nil
}

func (e *env) token(ep *endpoint, what string, i int) string {
	return fmt.Sprintf("%s-%s-%s-%d", e.runID, ep.name, what, i)
}

// workloads lists every timed workload in run order.
func (e *env) workloads() []workload {
	o := e.opts
	return []workload{
		{key: "load", name: fmt.Sprintf("page load (%d subresources)", o.subresources), target: 1.10, pairs: o.loadPairs, warm: 2, setup: e.setupLoad},
		{key: "latency", name: fmt.Sprintf("page load (%d subresources, %s per response)", o.subresources, o.rtt), target: 1.10, pairs: o.latencyPairs, warm: 2, setup: e.setupLatency},
		{key: "eval", name: fmt.Sprintf("%d Runtime.evaluate round trips", o.evals), target: 1.10, pairs: o.evalPairs, warm: 1, setup: e.setupEval},
		{key: "shot", name: "screenshot 1920x3000", target: 1.05, pairs: o.shotPairs, warm: 2, setup: e.setupShot},
		{key: "ws", name: fmt.Sprintf("WebSocket echo x%d", o.wsMessages), target: 1.10, pairs: o.wsPairs, warm: 1, setup: e.setupWS},
		{key: "users", name: fmt.Sprintf("%d users loading at once", o.users), target: 1.15, pairs: o.usersPairs, warm: 1, setup: e.setupUsers},
		{key: "tab", name: "new tab set-up (quiet)", target: 1.30, pairs: o.tabPairs, warm: 1, setup: e.setupTab},
		{key: "fair", name: "new tab set-up, another user flooding", target: 1.30, pairs: o.tabPairs, warm: 1, setup: e.setupFair},
	}
}

func (e *env) setupLoad(ctx context.Context, ep *endpoint) (measureFunc, func(), error) {
	p, cleanup, err := onePage(ctx, ep, "bench-load")
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, i int) (float64, error) {
		d, err := p.load(ctx, e.site.loadURL(e.token(ep, "load", i), e.opts.subresources))
		return ms(d), err
	}, cleanup, nil
}

// setupLatency loads the page-load page with every response (the document
// and each subresource) delayed by the round trip, so that the load waits on
// the network as on the real web instead of on Chrome's CPU.
func (e *env) setupLatency(ctx context.Context, ep *endpoint) (measureFunc, func(), error) {
	p, cleanup, err := onePage(ctx, ep, "bench-latency")
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, i int) (float64, error) {
		d, err := p.load(ctx, e.site.delayedLoadURL(e.token(ep, "latency", i), e.opts.subresources, e.opts.rtt))
		return ms(d), err
	}, cleanup, nil
}

func (e *env) setupEval(ctx context.Context, ep *endpoint) (measureFunc, func(), error) {
	p, cleanup, err := onePage(ctx, ep, "bench-eval")
	if err != nil {
		return nil, nil, err
	}
	if _, err := p.load(ctx, e.site.base+"/blank"); err != nil {
		cleanup()
		return nil, nil, err
	}
	return func(ctx context.Context, _ int) (float64, error) {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		start := time.Now()
		for range e.opts.evals {
			var v int
			if err := p.eval(ctx, "1+1", &v); err != nil {
				return 0, err
			}
			if v != 2 {
				return 0, fmt.Errorf("1+1 evaluated to %d", v)
			}
		}
		return ms(time.Since(start)), nil
	}, cleanup, nil
}

func (e *env) setupShot(ctx context.Context, ep *endpoint) (measureFunc, func(), error) {
	p, cleanup, err := onePage(ctx, ep, "bench-shot")
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err = p.c.Call(sctx, p.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": 1920, "height": 3000, "deviceScaleFactor": 1, "mobile": false,
	})
	if err == nil {
		_, err = p.load(ctx, e.site.base+"/shot")
	}
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return func(ctx context.Context, _ int) (float64, error) {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		start := time.Now()
		res, err := p.c.Call(ctx, p.session, "Page.captureScreenshot", map[string]any{
			"format": "png", "captureBeyondViewport": true,
		})
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		if len(res) < 100<<10 {
			return 0, fmt.Errorf("screenshot of %d bytes is too small for 1920x3000", len(res))
		}
		return ms(d), nil
	}, cleanup, nil
}

// echoJS sends n messages one after another over a WebSocket to url, each
// after the previous echo, and resolves to the in-page time in ms from open
// to the last echo.
const echoJS = `new Promise((resolve, reject) => {
  const ws = new WebSocket(%q), n = %d;
  let i = 0, t0 = 0;
  const timer = setTimeout(() => { ws.close(); reject(new Error('echo timed out at ' + i)); }, %d);
  ws.onerror = () => { clearTimeout(timer); reject(new Error('websocket error at ' + i)); };
  ws.onopen = () => { t0 = performance.now(); ws.send('m0'); };
  ws.onmessage = (ev) => {
    if (ev.data !== 'm' + i) { clearTimeout(timer); ws.close(); reject(new Error('bad echo ' + ev.data)); return; }
    if (++i === n) { const dt = performance.now() - t0; clearTimeout(timer); ws.close(); resolve(dt); return; }
    ws.send('m' + i);
  };
})`

func (e *env) setupWS(ctx context.Context, ep *endpoint) (measureFunc, func(), error) {
	p, cleanup, err := onePage(ctx, ep, "bench-ws")
	if err != nil {
		return nil, nil, err
	}
	if _, err := p.load(ctx, e.site.base+"/blank"); err != nil {
		cleanup()
		return nil, nil, err
	}
	wsURL := "ws" + e.site.base[len("http"):] + "/ws"
	js := fmt.Sprintf(echoJS, wsURL, e.opts.wsMessages, loadTimeout.Milliseconds()-1000)
	return func(ctx context.Context, _ int) (float64, error) {
		ctx, cancel := context.WithTimeout(ctx, loadTimeout)
		defer cancel()
		var dt float64
		err := p.eval(ctx, js, &dt)
		return dt, err
	}, cleanup, nil
}

func (e *env) setupUsers(ctx context.Context, ep *endpoint) (measureFunc, func(), error) {
	var pages []*page
	var cleanups []func()
	cleanup := func() {
		for _, c := range cleanups {
			c()
		}
	}
	for u := range e.opts.users {
		p, c, err := onePage(ctx, ep, fmt.Sprintf("bench-user-%d", u))
		if err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("user %d: %w", u, err)
		}
		pages, cleanups = append(pages, p), append(cleanups, c)
	}
	return func(ctx context.Context, i int) (float64, error) {
		var wg sync.WaitGroup
		errs := make([]error, len(pages))
		start := time.Now()
		for u, p := range pages {
			wg.Go(func() {
				url := e.site.loadURL(fmt.Sprintf("%s-u%d", e.token(ep, "users", i), u), e.opts.subresources)
				_, errs[u] = p.load(ctx, url)
			})
		}
		wg.Wait() // each load is bounded by loadTimeout
		return ms(time.Since(start)), errors.Join(errs...)
	}, cleanup, nil
}
