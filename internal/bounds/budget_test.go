package bounds

import (
	"errors"
	"testing"
)

// TestBudgetShares: a user's reservations stop at its share, everyone's at
// the total less what is queued for agents; a release makes room again and
// a refusal takes nothing.
func TestBudgetShares(t *testing.T) {
	queued := int64(0)
	b := NewBudget(100, 40, func() int64 { return queued })
	if err := b.Reserve("a", "a message", 40); err != nil {
		t.Fatal(err)
	}
	var over *OverBudget
	if err := b.Reserve("a", "a message", 1); !errors.As(err, &over) || over.Bound != BoundUserReceive {
		t.Fatalf("past the user's share: %v, want %s", err, BoundUserReceive)
	}
	if err := b.Reserve("b", "a message", 40); err != nil {
		t.Fatal(err)
	}
	queued = 15
	if err := b.Reserve("c", "a body", 10); !errors.As(err, &over) || over.Bound != BoundTotalReceive {
		t.Fatalf("past the total with 15 queued: %v, want %s", err, BoundTotalReceive)
	}
	if total, most := b.Receiving(); total != 80 || most != 40 {
		t.Fatalf("receiving %d, most %d; want 80, 40 (a refusal takes nothing)", total, most)
	}
	b.Release("a", 40)
	if err := b.Reserve("c", "a body", 10); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if total, _ := b.Receiving(); total != 50 {
		t.Fatalf("receiving %d, want 50", total)
	}
	var none *Budget
	if err := none.Reserve("a", "x", 1<<40); err != nil {
		t.Fatalf("a nil Budget refused: %v", err)
	}
	if off := NewBudget(-1, -1, nil); off.Reserve("a", "x", 1<<40) != nil {
		t.Fatal("a Budget with its bounds off refused")
	}
}
