package e2e

import (
	"sync"
	"testing"
)

// runConcurrently runs one subtest per name at once and returns when all
// have ended. It is the way for a parallel suite to run its own parts side
// by side: a subtest that calls t.Parallel waits for a free -parallel slot
// behind every other suite still queued, so the parent held its browser and
// guards idle for ten minutes and then finished last (CI wall time).
// t.Run may be called from several goroutines at once; every call returns
// before this does. Subtests run here must not call t.Parallel.
func runConcurrently(t *testing.T, names []string, f func(t *testing.T, name string)) {
	t.Helper()
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() { t.Run(name, func(t *testing.T) { f(t, name) }) })
	}
	wg.Wait()
}
