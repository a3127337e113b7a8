package setups

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAwait: Await returns once Done was called, before or after it, and
// fails with the context's error otherwise; Done twice is harmless.
func TestAwait(t *testing.T) {
	tb := New()
	tb.Done("A")
	tb.Done("A")
	if err := tb.Await(context.Background(), "A"); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		tb.Done("B")
	}()
	if err := tb.Await(context.Background(), "B"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := tb.Await(ctx, "C"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await of a target never set up: %v", err)
	}
	tb.Forget("A")
	if len(tb.done) != 2 {
		t.Fatalf("%d entries after Forget, want 2", len(tb.done))
	}
}
