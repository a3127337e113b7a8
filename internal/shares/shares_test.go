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

// TestTryAcquireLimit: a key at its limit of holders is refused, holds
// nothing more, and takes holders again once one leaves; other keys and
// no limit are unaffected.
func TestTryAcquireLimit(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	tb := newTable(c)
	var releases []func()
	for i := range 3 {
		_, release, ok := tb.TryAcquire("alice", 3)
		if !ok {
			t.Fatalf("holder %d of 3 refused", i+1)
		}
		releases = append(releases, release)
	}
	if _, release, ok := tb.TryAcquire("alice", 3); ok {
		t.Fatal("a 4th holder past the limit of 3 was taken")
	} else {
		release() // a no-op, safe to call
	}
	if got := tb.Held(); got != 1 {
		t.Fatalf("Held = %d, want 1", got)
	}
	if _, release, ok := tb.TryAcquire("bob", 3); !ok {
		t.Fatal("another key was refused")
	} else {
		release()
	}
	releases[0]()
	releases[0]() // idempotent: frees one slot, not two
	_, release, ok := tb.TryAcquire("alice", 3)
	if !ok {
		t.Fatal("a holder after one left was refused")
	}
	if _, _, ok := tb.TryAcquire("alice", 3); ok {
		t.Fatal("one release freed two slots")
	}
	if _, r, ok := tb.TryAcquire("alice", 0); !ok {
		t.Fatal("limit 0 refused")
	} else {
		r()
	}
	release()
	for _, r := range releases[1:] {
		r()
	}
}
