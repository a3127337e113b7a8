package users

import (
	"context"
	"errors"
	"testing"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// TestDisposeNow: browser_close disposes a user's contexts at once, but
// never from under a connection that still holds the user.
func TestDisposeNow(t *testing.T) {
	f := &fakeContexts{}
	r := New(f, pages.New(), -1, nil)
	ctx := context.Background()
	u, err := r.Acquire(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	r.AddContext(u, "extra")
	if err := r.DisposeNow(ctx, "alice"); !errors.Is(err, ErrInUse) {
		t.Fatalf("with a connection: %v, want ErrInUse", err)
	}
	if _, disposed := f.counts(); len(disposed) != 0 {
		t.Fatalf("disposed under a connection: %v", disposed)
	}
	r.Release(u)
	if err := r.DisposeNow(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, disposed := f.counts(); len(disposed) != 2 {
		t.Fatalf("disposed %v, want the primary and the extra context", disposed)
	}
	if r.Lookup("alice") != nil || r.OwnsContext(u, "extra") {
		t.Fatal("the user survived DisposeNow")
	}
	if err := r.DisposeNow(ctx, "nobody"); err != nil {
		t.Fatalf("unknown user: %v", err)
	}
	u2, err := r.Acquire(ctx, "alice")
	if err != nil || u2 == u || u2.Primary == u.Primary {
		t.Fatalf("after DisposeNow the next connection gets a fresh context: %v %+v", err, u2)
	}
	r.Release(u2)
}
