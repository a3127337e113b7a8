package users

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cdpguard/cdpguard/internal/pages"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeContexts stands in for the browser: it hands out ctx-1, ctx-2, ...
// and records what was disposed. gate, when set, holds every Create until
// it is closed, so that concurrent Acquires pile up behind one creation.
type fakeContexts struct {
	gate chan struct{}
	fail error

	mu       sync.Mutex
	created  int
	disposed []string
}

func (f *fakeContexts) Create(ctx context.Context, key string) (string, error) {
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return "", f.fail
	}
	f.created++
	return fmt.Sprintf("ctx-%d", f.created), nil
}

func (f *fakeContexts) Dispose(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disposed = append(f.disposed, id)
	return nil
}

func (f *fakeContexts) counts() (int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.created, slices.Clone(f.disposed)
}

// fakeClock is a settable clock for the idle sweep.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestRegistry(f *fakeContexts, idle time.Duration) (*Registry, *fakeClock) {
	r := New(f, pages.New(), idle, nil)
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	r.now = clk.now
	return r, clk
}

func acquire(t *testing.T, r *Registry, key string) *User {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u, err := r.Acquire(ctx, key)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return u
}

func TestAcquireCreatesOnceUnderConcurrency(t *testing.T) {
	f := &fakeContexts{gate: make(chan struct{})}
	r, _ := newTestRegistry(f, time.Minute)
	const n = 32
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := make([]*User, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = r.Acquire(ctx, "alice") })
	}
	// Let the goroutines pile up behind the one creation, then release it.
	deadline := time.Now().Add(5 * time.Second)
	for r.Stats().Connections < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(f.gate)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Acquire %d: %v", i, errs[i])
		}
		if got[i] != got[0] {
			t.Fatalf("Acquire %d returned another User", i)
		}
	}
	if created, _ := f.counts(); created != 1 {
		t.Errorf("Create called %d times, want 1", created)
	}
	if got[0].Primary != "ctx-1" || got[0].Key != "alice" {
		t.Errorf("user = %q/%q, want alice/ctx-1", got[0].Key, got[0].Primary)
	}
	if s := r.Stats(); s.Users != 1 || s.Connections != n {
		t.Errorf("stats = %+v, want 1 user, %d connections", s, n)
	}
	for range n {
		r.Release(got[0])
	}
	if s := r.Stats(); s.Connections != 0 {
		t.Errorf("connections after releasing all = %d", s.Connections)
	}
	// A surplus Release never makes the count negative.
	r.Release(got[0])
	if s := r.Stats(); s.Connections != 0 {
		t.Errorf("connections after a surplus release = %d", s.Connections)
	}
}

func TestUsersGetSeparateContexts(t *testing.T) {
	f := &fakeContexts{}
	r, _ := newTestRegistry(f, time.Minute)
	a, b, fallback := acquire(t, r, "alice"), acquire(t, r, "bob"), acquire(t, r, "")
	if a.Primary == b.Primary || a.Primary == fallback.Primary || b.Primary == fallback.Primary {
		t.Fatalf("primaries not distinct: %q %q %q", a.Primary, b.Primary, fallback.Primary)
	}
	if !r.OwnsContext(a, a.Primary) || r.OwnsContext(a, b.Primary) || r.OwnsContext(b, a.Primary) {
		t.Error("context ownership crosses users")
	}
	if r.OwnsContext(a, "") || r.OwnsContext(a, "unknown") {
		t.Error("empty or unknown context owned")
	}
	if again := acquire(t, r, "alice"); again != a {
		t.Error("second Acquire for alice returned another User")
	}
	if r.Lookup("alice") != a || r.Lookup("carol") != nil {
		t.Error("Lookup wrong")
	}
}

func TestAcquireCreateFailure(t *testing.T) {
	boom := errors.New("boom")
	f := &fakeContexts{fail: boom}
	r, _ := newTestRegistry(f, time.Minute)
	_, err := r.Acquire(context.Background(), "alice")
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want wrapping boom", err)
	}
	if s := r.Stats(); s.Users != 0 || s.Connections != 0 {
		t.Errorf("failed user kept: %+v", s)
	}
	if r.Lookup("alice") != nil {
		t.Error("Lookup finds a user whose context was never made")
	}
	f.mu.Lock()
	f.fail = nil
	f.mu.Unlock()
	if u := acquire(t, r, "alice"); u.Primary == "" {
		t.Error("retry after a failure gave no context")
	}
}

func TestAcquireWaiterCancelled(t *testing.T) {
	f := &fakeContexts{gate: make(chan struct{})}
	r, _ := newTestRegistry(f, time.Minute)
	creatorDone := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := r.Acquire(ctx, "alice")
		creatorDone <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for r.Stats().Connections < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.Acquire(ctx, "alice"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiter err = %v, want deadline exceeded", err)
	}
	close(f.gate)
	select {
	case err := <-creatorDone:
		if err != nil {
			t.Fatalf("creator: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("creator did not finish")
	}
	if s := r.Stats(); s.Connections != 1 {
		t.Errorf("connections = %d, want 1 (the cancelled waiter released its count)", s.Connections)
	}
}

func TestTargetAndContextOwnership(t *testing.T) {
	f := &fakeContexts{}
	pg := pages.New()
	r := New(f, pg, time.Minute, nil)
	a, b := acquire(t, r, "alice"), acquire(t, r, "bob")
	r.AddContext(a, "extra-a")
	if got := r.Contexts(a); len(got) != 2 || got[0] != a.Primary || got[1] != "extra-a" {
		t.Errorf("Contexts(alice) = %q, want primary first then extra-a", got)
	}
	if !r.OwnsContext(a, "extra-a") || r.OwnsContext(b, "extra-a") {
		t.Error("extra context ownership wrong")
	}
	pg.Track("t-a1", a.Primary)
	pg.Track("t-a2", "extra-a")
	pg.Track("t-b1", b.Primary)
	pg.Track("t-none", "")  // ignored
	pg.Track("", a.Primary) // ignored
	if !r.OwnsTarget(a, "t-a1") || !r.OwnsTarget(a, "t-a2") || r.OwnsTarget(a, "t-b1") || !r.OwnsTarget(b, "t-b1") {
		t.Error("target ownership wrong")
	}
	if r.OwnsTarget(a, "t-none") || r.OwnsTarget(a, "unknown") {
		t.Error("untracked target owned")
	}
	got := r.Targets(a)
	slices.Sort(got)
	if !slices.Equal(got, []string{"t-a1", "t-a2"}) {
		t.Errorf("Targets(alice) = %q", got)
	}
	pg.Destroyed("t-a1")
	if got := r.Targets(a); !slices.Equal(got, []string{"t-a2"}) {
		t.Errorf("Targets(alice) after destroy = %q", got)
	}
	// A destroyed target is still attributed for late events.
	if !r.OwnsTarget(a, "t-a1") {
		t.Error("destroyed target no longer attributed")
	}
	r.RemoveContext("extra-a")
	if r.OwnsContext(a, "extra-a") || r.OwnsTarget(a, "t-a2") {
		t.Error("removed context still owned")
	}
	if got := r.Contexts(a); len(got) != 1 {
		t.Errorf("Contexts after remove = %q", got)
	}
}

func TestIdleSweep(t *testing.T) {
	f := &fakeContexts{}
	r, clk := newTestRegistry(f, time.Minute)
	ctx := context.Background()
	a := acquire(t, r, "alice")
	r.AddContext(a, "extra-a")
	busy := acquire(t, r, "bob") // stays connected
	r.Release(a)

	clk.add(50 * time.Second)
	r.Touch(a) // activity restarts the idle period
	clk.add(50 * time.Second)
	r.sweep(ctx)
	if _, disposed := f.counts(); len(disposed) != 0 || r.Lookup("alice") == nil {
		t.Fatalf("disposed %q before the idle period ended", disposed)
	}

	clk.add(11 * time.Second)
	r.sweep(ctx)
	_, disposed := f.counts()
	slices.Sort(disposed)
	if !slices.Equal(disposed, []string{a.Primary, "extra-a"}) {
		t.Fatalf("disposed %q, want alice's two contexts", disposed)
	}
	if r.Lookup("alice") != nil || r.OwnsContext(a, a.Primary) {
		t.Error("alice still known after disposal")
	}
	if r.Lookup("bob") != busy {
		t.Error("a connected user was disposed")
	}
	if s := r.Stats(); s.Disposed != 1 || s.Users != 1 {
		t.Errorf("stats = %+v, want 1 disposed, 1 user", s)
	}

	// The next connection gets a fresh context.
	a2 := acquire(t, r, "alice")
	if a2 == a || a2.Primary == a.Primary {
		t.Errorf("reconnect reused the disposed context %q", a2.Primary)
	}
}

// TestSweepNeverIdle: idle <= 0 never disposes. (Destroyed targets are
// dropped by the page registry: internal/pages.)
func TestSweepNeverIdle(t *testing.T) {
	f := &fakeContexts{}
	r, clk := newTestRegistry(f, -1)
	a := acquire(t, r, "alice")
	r.Release(a)
	clk.add(24 * time.Hour)
	r.sweep(context.Background())
	if _, disposed := f.counts(); len(disposed) != 0 {
		t.Errorf("idle <= 0 disposed %q", disposed)
	}
}

func TestRunDisposesAndStops(t *testing.T) {
	f := &fakeContexts{}
	r := New(f, pages.New(), 100*time.Millisecond, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	a := acquire(t, r, "alice")
	r.Release(a)
	deadline := time.Now().Add(5 * time.Second)
	for r.Stats().Disposed == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if _, disposed := f.counts(); !slices.Equal(disposed, []string{a.Primary}) {
		t.Errorf("Run disposed %q, want %q", disposed, a.Primary)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if _, err := r.Acquire(context.Background(), "bob"); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Run ended: %v, want ErrClosed", err)
	}
}

func TestUsersWindows(t *testing.T) {
	pg := pages.New()
	r := New(nil, pg, 0, nil)
	alice := &User{Key: "alice", Primary: "ctxA", contexts: map[string]bool{"ctxA": true}}
	mallory := &User{Key: "mallory", Primary: "ctxM", contexts: map[string]bool{"ctxM": true}}
	r.owner["ctxA"], r.owner["ctxM"] = alice, mallory
	pg.Track("tA", "ctxA")
	pg.Track("tM", "ctxM")
	r.AddWindow("tA", 1)
	r.AddWindow("tM", 2)
	r.AddWindow("unknown", 3)
	for _, c := range []struct {
		u    *User
		w    int64
		want bool
	}{{alice, 1, true}, {alice, 2, false}, {mallory, 2, true}, {mallory, 1, false}, {alice, 3, false}, {mallory, 3, false}} {
		if got := r.OwnsWindow(c.u, c.w); got != c.want {
			t.Errorf("OwnsWindow(%s, %d) = %v, want %v", c.u.Key, c.w, got, c.want)
		}
	}
	r.RemoveContext("ctxA")
	if r.OwnsWindow(alice, 1) {
		t.Error("a disposed context's window is still owned")
	}
}

// TestWindowsForgottenWithContext: a disposed context's windows are not kept.
func TestWindowsForgottenWithContext(t *testing.T) {
	pg := pages.New()
	r := New(nil, pg, 0, nil)
	u := &User{Key: "a", contexts: map[string]bool{"C1": true}}
	r.owner["C1"] = u
	pg.Track("T1", "C1")
	r.AddWindow("T1", 7)
	if !r.OwnsWindow(u, 7) {
		t.Fatal("window 7 not recorded")
	}
	r.RemoveContext("C1")
	if len(r.windows) != 0 {
		t.Errorf("windows after the context went: %v", r.windows)
	}
}

// TestTabs: a user's tabs are the live pages in the user's contexts, as
// the page registry has them: not other targets, not other users' pages,
// not destroyed ones (which the registry still places for late events).
func TestTabs(t *testing.T) {
	pg := pages.New()
	r := New(&fakeContexts{}, pg, time.Minute, nil)
	a, b := acquire(t, r, "alice"), acquire(t, r, "bob")
	r.AddContext(a, "extra-a")
	for _, s := range []struct{ target, context string }{
		{"a1", a.Primary}, {"a2", "extra-a"}, {"a3", a.Primary}, {"b1", b.Primary},
	} {
		pg.Track(s.target, s.context)
		pg.MarkPage(s.target)
	}
	pg.Track("a-worker", a.Primary) // not a page
	pg.MarkPage("nowhere")          // a page in no known context
	if n := r.Tabs(a); n != 3 {
		t.Errorf("Tabs(alice) = %d, want 3", n)
	}
	if most, atLimit := r.TabStats(3); most != 3 || atLimit != 1 {
		t.Errorf("TabStats(3) = %d, %d, want 3, 1", most, atLimit)
	}
	pg.Destroyed("a3")
	if n := r.Tabs(a); n != 2 || !r.OwnsTarget(a, "a3") {
		t.Errorf("after a tab's end: Tabs(alice) = %d, owns it %v; want 2, still owned for late events", n, r.OwnsTarget(a, "a3"))
	}
	if n := r.Tabs(b); n != 1 {
		t.Errorf("Tabs(bob) = %d, want 1", n)
	}
	if most, atLimit := r.TabStats(0); most != 2 || atLimit != 0 {
		t.Errorf("TabStats(0) = %d, %d, want 2, 0", most, atLimit)
	}
	if key, primary, ok := r.PrimaryOf("a2"); !ok || key != "alice" || primary != a.Primary {
		t.Errorf("PrimaryOf(a2) = %q, %q, %v", key, primary, ok)
	}
	if key, ok := r.OwnerKey("b1"); !ok || key != "bob" {
		t.Errorf("OwnerKey(b1) = %q, %v", key, ok)
	}
	if _, ok := r.OwnerKey("nowhere"); ok {
		t.Error("a target in no context has an owner")
	}
}
