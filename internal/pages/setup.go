package pages

import (
	"context"
	"fmt"
)

// The guard's setup of each target it auto-attached (internal/targets):
// nothing may use a new tab before the guard's interception and scripts
// are in place, so whoever opens one (the reader's tab, the start-up over
// the pages already open) waits for its setup's end.

// SetupDone records that the guard's setup of targetID ended (released,
// or closed because it failed or was over the tab cap).
func (r *Registry) SetupDone(targetID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.made(targetID)
	if t.setup == nil {
		t.setup = make(chan struct{})
	}
	select {
	case <-t.setup:
	default:
		close(t.setup)
	}
}

// AwaitSetup waits until the guard's setup of targetID ended; the target
// may not be attached yet (a Target.createTarget reply can come before
// the auto-attach's event). The wait is outside the registry's lock.
func (r *Registry) AwaitSetup(ctx context.Context, targetID string) error {
	r.mu.Lock()
	t := r.made(targetID)
	if t.setup == nil {
		t.setup = make(chan struct{})
	}
	ch := t.setup
	r.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("page %s was not set up in time: %w", targetID, ctx.Err())
	}
}
