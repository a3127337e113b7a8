package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Fairness (issue 16): one user's flood of allowed browser-level commands
// must not slow another user's new-tab set-up beyond a stated bound.
// setupTab measures a quiet new tab; setupFair the same while another user
// floods. Both sides are measured: direct Chromium has no per-user share,
// so its figure shows what the flood costs without one.

// newTab opens a tab for s, evaluates in it and closes it: what an agent's
// "new page" costs, including the guard's set-up of the target.
func newTab(ctx context.Context, s *session) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, loadTimeout)
	defer cancel()
	start := time.Now()
	p, err := openPage(ctx, s.c, s.contextID)
	if err != nil {
		return 0, err
	}
	var v int
	err = p.eval(ctx, "1+1", &v)
	d := time.Since(start)
	p.close(ctx)
	if err == nil && v != 2 {
		err = fmt.Errorf("1+1 evaluated to %d", v)
	}
	return d, err
}

func (e *env) setupTab(ctx context.Context, ep *endpoint) (measureFunc, func(), error) {
	s, err := ep.connect(ctx, "bench-tab")
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, _ int) (float64, error) {
		d, err := newTab(ctx, s)
		return ms(d), err
	}, s.c.Close, nil
}

// floodConns and floodCallers shape the flood: the flooding user's
// connections, and the commands each keeps in flight.
const (
	floodConns   = 4
	floodCallers = 16
)

func (e *env) setupFair(ctx context.Context, ep *endpoint) (measureFunc, func(), error) {
	alice, err := ep.connect(ctx, "bench-fair-alice")
	if err != nil {
		return nil, nil, err
	}
	var flooders []*session
	cleanup := func() {
		alice.c.Close()
		for _, f := range flooders {
			f.c.Close()
		}
	}
	for range floodConns {
		f, err := ep.connect(ctx, "bench-fair-mallory")
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		flooders = append(flooders, f)
	}
	return func(ctx context.Context, _ int) (float64, error) {
		fctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, f := range flooders {
			for range floodCallers {
				wg.Go(func() {
					// Refusals (the per-user rate limit) are part of the
					// flood; only the end of the measurement stops it.
					for fctx.Err() == nil {
						cctx, cancel := context.WithTimeout(fctx, opTimeout)
						_, _ = f.c.Call(cctx, "", "Target.getTargets", nil)
						cancel()
					}
				})
			}
		}
		time.Sleep(300 * time.Millisecond) // the flood under way
		d, err := newTab(ctx, alice)
		stop()
		wg.Wait()
		return ms(d), err
	}, cleanup, nil
}
