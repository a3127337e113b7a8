package users

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestAcquireChecked: a user the check refuses is released; the context
// the refused call made is disposed, one another connection holds or an
// earlier call made is kept.
func TestAcquireChecked(t *testing.T) {
	f := &fakeContexts{}
	r, _ := newTestRegistry(f, time.Minute)
	ctx := context.Background()
	refuse := errors.New("another group")
	no := func() error { return refuse }
	yes := func() error { return nil }
	if _, err := r.AcquireChecked(ctx, "alice", no); !errors.Is(err, refuse) {
		t.Fatalf("refused: %v", err)
	}
	if created, disposed := f.counts(); created != 1 || !slices.Equal(disposed, []string{"ctx-1"}) || r.Lookup("alice") != nil {
		t.Fatalf("a refused first acquire: %d created, disposed %q, user left: %v", created, disposed, r.Lookup("alice") != nil)
	}
	u, err := r.AcquireChecked(ctx, "bob", yes)
	if err != nil || u.Key != "bob" {
		t.Fatalf("allowed: %v", err)
	}
	if _, err := r.AcquireChecked(ctx, "bob", no); !errors.Is(err, refuse) {
		t.Fatalf("refused while held: %v", err)
	}
	if _, disposed := f.counts(); len(disposed) != 1 || r.Lookup("bob") == nil {
		t.Fatalf("the held user's context was disposed: %q", disposed)
	}
	r.Release(u)
	if r.Stats().Connections != 0 {
		t.Fatalf("connections left: %+v", r.Stats())
	}
}
