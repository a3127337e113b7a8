package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
)

// profileLoads profiles this process, which hosts cdpguard, while the
// guarded browser loads the page-load page o.profileLoads times. The
// profile also holds the bench's own site server and CDP client; focus on
// cdpguard's packages with `go tool pprof -focus cdpguard`.
func profileLoads(ctx context.Context, e *env, guard *endpoint) error {
	p, cleanup, err := onePage(ctx, guard, "bench-profile")
	if err != nil {
		return fmt.Errorf("profile setup: %w", err)
	}
	defer cleanup()
	if _, err := p.load(ctx, e.site.loadURL(e.token(guard, "profile-warm", 0), e.opts.subresources)); err != nil {
		return fmt.Errorf("profile warm-up: %w", err)
	}
	f, err := os.Create(e.opts.cpuprofile)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	defer func() { _ = f.Close() }()
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	defer pprof.StopCPUProfile()
	fmt.Fprintf(os.Stderr, "profiling %d cdpguard page loads into %s\n", e.opts.profileLoads, e.opts.cpuprofile)
	for i := range e.opts.profileLoads {
		if _, err := p.load(ctx, e.site.loadURL(e.token(guard, "profile", i), e.opts.subresources)); err != nil {
			return fmt.Errorf("profiled load %d: %w", i, err)
		}
	}
	return nil
}
