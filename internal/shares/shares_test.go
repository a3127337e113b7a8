package shares

import (
	"fmt"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTable(c *clock) *Table[*int] {
	n := 0
	t := New(func() *int { n++; v := n; return &v }, 2*time.Second)
	t.now = c.now
	return t
}

// TestDropsAfterLastHolder: memory follows the users connected now.
func TestDropsAfterLastHolder(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	tb := newTable(c)
	for i := range 1000 {
		_, release := tb.Acquire(fmt.Sprintf("user-%d", i))
		release()
		release() // idempotent
	}
	c.t = c.t.Add(3 * time.Second)
	_, release := tb.Acquire("late")
	defer release()
	if got := tb.Len(); got != 1 {
		t.Fatalf("Len = %d after 1000 users left, want 1 (the one connected)", got)
	}
	if len(tb.idle) != 0 {
		t.Fatalf("idle queue holds %d keys, want 0", len(tb.idle))
	}
}

// TestSharedWhileHeld: every holder of a key gets the same value, and it
// stays while one holder remains.
func TestSharedWhileHeld(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	tb := newTable(c)
	a, ra := tb.Acquire("u")
	b, rb := tb.Acquire("u")
	if a != b {
		t.Fatal("two holders of one key got different values")
	}
	ra()
	c.t = c.t.Add(time.Hour)
	d, rd := tb.Acquire("u")
	if d != a {
		t.Fatal("value dropped while a holder remained")
	}
	rb()
	rd()
}

// TestGraceKeepsState: leaving and coming back within the grace period gets
// the same value (a user cannot reset its rate bucket by reconnecting);
// after it, a fresh one.
func TestGraceKeepsState(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	tb := newTable(c)
	a, r := tb.Acquire("u")
	r()
	c.t = c.t.Add(time.Second)
	b, r := tb.Acquire("u")
	if a != b {
		t.Fatal("reconnecting within the grace period got a fresh value")
	}
	r()
	c.t = c.t.Add(1500 * time.Millisecond) // 2.5 s after the first leave, 1.5 s after the second
	b2, r := tb.Acquire("u")
	if b2 != a {
		t.Fatal("a stale idle mark removed a value released again later")
	}
	r()
	c.t = c.t.Add(3 * time.Second)
	d, r := tb.Acquire("u")
	defer r()
	if d == a {
		t.Fatal("value kept past the grace period")
	}
}

func TestRange(t *testing.T) {
	c := &clock{}
	tb := newTable(c)
	_, release := tb.Acquire("a")
	tb.Acquire("b")
	release()
	n := 0
	tb.Range(func(*int) { n++ })
	if n != 2 {
		t.Fatalf("Range saw %d values, want 2 (one held, one in its grace)", n)
	}
}
