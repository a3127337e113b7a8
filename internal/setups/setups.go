// Package setups tracks the guard's setup of each target, so that start-up
// and the reader can wait until a page is covered before they use it. A
// target's entry exists from the first Await or Done until Forget.
package setups

import (
	"context"
	"fmt"
	"sync"
)

// Table is the setups of the targets the guard attached to.
type Table struct {
	mu   sync.Mutex
	done map[string]chan struct{} // targetId → closed when the guard's setup on it ended
}

// New returns an empty Table.
func New() *Table { return &Table{done: map[string]chan struct{}{}} }

// ch returns the channel of targetID, made if absent; t.mu is held.
func (t *Table) ch(targetID string) chan struct{} {
	ch := t.done[targetID]
	if ch == nil {
		ch = make(chan struct{})
		t.done[targetID] = ch
	}
	return ch
}

// Await waits until the guard's setup on a target ended.
func (t *Table) Await(ctx context.Context, targetID string) error {
	t.mu.Lock()
	ch := t.ch(targetID)
	t.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("page %s was not set up in time: %w", targetID, ctx.Err())
	}
}

// Done records that the guard's setup on a target ended.
func (t *Table) Done(targetID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := t.ch(targetID)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// Forget drops the entry of a target that was destroyed.
func (t *Table) Forget(targetID string) {
	t.mu.Lock()
	delete(t.done, targetID)
	t.mu.Unlock()
}
