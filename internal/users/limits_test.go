package users

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/pages"
)

// capCounts records OnCap by cap name.
type capCounts struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *capCounts) on(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[name]++
}

func (c *capCounts) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name]
}

// refusedBy asserts that acquiring key fails with a *CapError of capName
// whose message names flag, and that no context was made for it.
func refusedBy(t *testing.T, r *Registry, f *fakeContexts, key, capName, flag string) {
	t.Helper()
	before, _ := f.counts()
	_, err := r.Acquire(context.Background(), key)
	ce, ok := errors.AsType[*CapError](err)
	if !ok || ce.Cap != capName || !errors.Is(err, ErrCap) || !strings.Contains(err.Error(), flag) {
		t.Fatalf("Acquire(%q) = %v, want a %s cap refusal naming %s", key, err, capName, flag)
	}
	if after, _ := f.counts(); after != before {
		t.Fatalf("a refused user made a context (%d -> %d)", before, after)
	}
	if r.Lookup(key) != nil || r.Stats().Users != r.usersHeld() {
		t.Fatalf("a refused user is registered")
	}
}

func (r *Registry) usersHeld() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.users)
}

// TestUsersCap: past MaxUsers a new user is refused naming the cap, with
// no context made and the refusal counted; existing users keep being
// served; a user that goes frees its place.
func TestUsersCap(t *testing.T) {
	f := &fakeContexts{}
	r, _ := newTestRegistry(f, time.Minute)
	var caps capCounts
	r.SetLimits(Limits{MaxUsers: 2, OnCap: caps.on})
	a := acquire(t, r, "alice")
	b := acquire(t, r, "bob")
	refusedBy(t, r, f, "carol", CapUsers, "--max-users=2")
	if again := acquire(t, r, "alice"); again != a {
		t.Fatal("an existing user got another user")
	}
	if caps.get(CapUsers) != 1 {
		t.Fatalf("OnCap(%s) called %d times, want 1", CapUsers, caps.get(CapUsers))
	}
	r.Release(b)
	if err := r.DisposeNow(context.Background(), "bob"); err != nil {
		t.Fatal(err)
	}
	acquire(t, r, "carol")
	if (&CapError{Cap: CapUsers}).Status() != http.StatusServiceUnavailable {
		t.Fatal("the users cap is not a 503")
	}
}

// TestContextsCap: the contexts of all users together (their own and
// those they made) are capped: a new user past it is refused, and so is
// another context (CheckContextsInAll); both are counted.
func TestContextsCap(t *testing.T) {
	f := &fakeContexts{}
	r, _ := newTestRegistry(f, time.Minute)
	var caps capCounts
	r.SetLimits(Limits{MaxContexts: 3, OnCap: caps.on})
	a := acquire(t, r, "alice")
	acquire(t, r, "bob")
	if err := r.CheckContextsInAll(); err != nil {
		t.Fatalf("2 of 3 contexts: %v", err)
	}
	r.AddContext(a, "alice-2")
	err := r.CheckContextsInAll()
	if ce, ok := errors.AsType[*CapError](err); !ok || ce.Cap != CapContexts || !strings.Contains(err.Error(), "--max-contexts=3") {
		t.Fatalf("3 of 3 contexts: %v", err)
	}
	refusedBy(t, r, f, "carol", CapContexts, "--max-contexts=3")
	if caps.get(CapContexts) != 2 {
		t.Fatalf("OnCap(%s) called %d times, want 2", CapContexts, caps.get(CapContexts))
	}
	r.RemoveContext("alice-2")
	acquire(t, r, "carol")
}

// TestContextsBeingMadeCount: a user whose context is still being made
// holds a place under both caps, so racing first connections cannot go
// past them.
func TestContextsBeingMadeCount(t *testing.T) {
	f := &fakeContexts{gate: make(chan struct{})}
	r, _ := newTestRegistry(f, time.Minute)
	r.SetLimits(Limits{MaxUsers: 5, MaxContexts: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := r.Acquire(ctx, "alice"); done <- err }()
	for r.usersHeld() == 0 { // bounded by ctx: the goroutine registers at once
		select {
		case <-ctx.Done():
			t.Fatal("alice was never registered")
		case <-time.After(time.Millisecond):
		}
	}
	_, err := r.Acquire(ctx, "bob")
	if ce, ok := errors.AsType[*CapError](err); !ok || ce.Cap != CapContexts {
		t.Fatalf("bob beside alice's context being made: %v", err)
	}
	close(f.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestNewUsersRate: new users come from a token bucket (Rate a second,
// Burst at once): past it a new user is refused naming the cap and
// counted, an existing user never is, and the bucket refills with time.
// A user refused by another cap takes no token.
func TestNewUsersRate(t *testing.T) {
	f := &fakeContexts{}
	r, clk := newTestRegistry(f, time.Minute)
	var caps capCounts
	r.SetLimits(Limits{Rate: 2, Burst: 3, MaxUsers: 4, OnCap: caps.on})
	for i := range 3 {
		acquire(t, r, fmt.Sprintf("burst-%d", i))
	}
	refusedBy(t, r, f, "late", CapNewUsers, "--new-users-per-second=2")
	acquire(t, r, "burst-0")
	clk.add(500 * time.Millisecond) // one token back
	acquire(t, r, "late")
	clk.add(500 * time.Millisecond)                        // one token back
	refusedBy(t, r, f, "later", CapUsers, "--max-users=4") // full: takes no token
	b := r.Lookup("burst-1")
	r.Release(b)
	if err := r.DisposeNow(context.Background(), "burst-1"); err != nil {
		t.Fatal(err)
	}
	acquire(t, r, "later") // the token the users cap's refusal left
	if caps.get(CapNewUsers) != 1 || caps.get(CapUsers) != 1 {
		t.Fatalf("counted %v", caps.m)
	}
	if (&CapError{Cap: CapNewUsers}).Status() != http.StatusTooManyRequests {
		t.Fatal("the rate cap is not a 429")
	}
}

// TestCheckKey: a session header up to the cap is a key; one byte more is
// refused naming the header and the cap, with 431; no cap, no refusal.
func TestCheckKey(t *testing.T) {
	if err := CheckKey("X-User", strings.Repeat("a", 256), 256); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	err := CheckKey("X-User", strings.Repeat("a", 257), 256)
	ce, ok := errors.AsType[*CapError](err)
	if !ok || ce.Cap != CapHeader || ce.Status() != http.StatusRequestHeaderFieldsTooLarge ||
		!strings.Contains(err.Error(), "X-User") || !strings.Contains(err.Error(), "256") || len(err.Error()) > 123 {
		t.Fatalf("over the cap: %v", err)
	}
	if err := CheckKey("X-User", strings.Repeat("a", 1<<20), 0); err != nil {
		t.Fatalf("no cap: %v", err)
	}
}

// TestTabsCap: the open tabs of all users together are capped: a tab past
// it is refused naming the cap and counted (CheckTabsInAll); one that got
// past the check is over it (OverTabsInAll, which counts nothing); tabs
// in no user's context do not count, and a tab's end frees its place.
func TestTabsCap(t *testing.T) {
	pg := pages.New()
	r := New(&fakeContexts{}, pg, time.Minute, nil)
	var caps capCounts
	r.SetLimits(Limits{MaxTabs: 2, OnCap: caps.on})
	a, b := acquire(t, r, "alice"), acquire(t, r, "bob")
	tab := func(target, context string) { pg.Track(target, context); pg.MarkPage(target) }
	tab("a1", a.Primary)
	tab("human", "default") // a page in no user's context
	if err := r.CheckTabsInAll(); err != nil {
		t.Fatalf("1 of 2 tabs: %v", err)
	}
	tab("b1", b.Primary)
	err := r.CheckTabsInAll()
	if ce, ok := errors.AsType[*CapError](err); !ok || ce.Cap != CapTabs || !strings.Contains(err.Error(), "--max-tabs=2") || ce.Status() != http.StatusServiceUnavailable {
		t.Fatalf("2 of 2 tabs: %v", err)
	}
	if r.OverTabsInAll() != nil {
		t.Error("2 of 2 tabs is not over the cap")
	}
	tab("b2", b.Primary) // a popup past the check
	if e := r.OverTabsInAll(); e == nil || e.Cap != CapTabs {
		t.Errorf("3 of 2 tabs: %v, want over the cap", e)
	}
	if caps.get(CapTabs) != 1 {
		t.Errorf("OnCap(%s) called %d times, want 1", CapTabs, caps.get(CapTabs))
	}
	pg.Destroyed("b2")
	pg.Destroyed("b1")
	if err := r.CheckTabsInAll(); err != nil {
		t.Errorf("after two tabs ended: %v", err)
	}
}
