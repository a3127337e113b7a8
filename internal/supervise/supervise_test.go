package supervise

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeGuard is a guard whose browser dies when the test says so.
type fakeGuard struct {
	n      int // launch number, from 1
	done   chan struct{}
	dieOne sync.Once
	closed atomic.Bool
	agents atomic.Int32 // CloseAgents calls
}

func (g *fakeGuard) Serving() bool {
	if g == nil {
		return false
	}
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

func (g *fakeGuard) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.WriteHeader(http.StatusTeapot) // "served by a guard"
}

func (g *fakeGuard) Done() <-chan struct{}          { return g.done }
func (g *fakeGuard) ExitErr() error                 { return errors.New("killed") }
func (g *fakeGuard) CloseAgents(code int, _ string) { g.agents.Add(1) }
func (g *fakeGuard) die()                           { g.dieOne.Do(func() { close(g.done) }) }
func (g *fakeGuard) Close() error                   { g.closed.Store(true); g.die(); return nil }

// launcher hands out fake guards and reports each launch; fail makes the
// next launches fail.
type launcher struct {
	mu       sync.Mutex
	n        int
	fail     bool
	launched chan *fakeGuard
	lasts    []*fakeGuard // the last argument of each launch
}

func (l *launcher) launch(_ context.Context, last *fakeGuard) (*fakeGuard, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lasts = append(l.lasts, last)
	if l.fail {
		return nil, errors.New("no browser")
	}
	l.n++
	g := &fakeGuard{n: l.n, done: make(chan struct{})}
	l.launched <- g
	return g, nil
}

var errGaveUp = errors.New("gave up")

func start(t *testing.T, l *launcher, maxFailures int, restarted *counter) *Supervisor[fakeGuard, *fakeGuard] {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New[fakeGuard](ln, Options[*fakeGuard]{
		MaxFailures: maxFailures,
		Window:      time.Minute,
		Backoff:     time.Millisecond,
		Launch:      l.launch,
		Metrics:     http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "metrics") }),
		Restarts:    restarted,
		ErrGaveUp:   errGaveUp,
		Log:         slog.New(slog.DiscardHandler),
	})
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

func next(t *testing.T, l *launcher) *fakeGuard {
	t.Helper()
	select {
	case g := <-l.launched:
		return g
	case <-time.After(10 * time.Second):
		t.Fatal("no launch within 10 s")
		return nil
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

func status(s *Supervisor[fakeGuard, *fakeGuard], path string) int {
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	r.Host = "127.0.0.1"
	s.ServeHTTP(w, r)
	return w.Code
}

// TestRelaunch: a guard whose browser dies is replaced by a new launch,
// which gets the dead one as last; between them only /healthz and
// /metrics answer 200.
func TestRelaunch(t *testing.T) {
	l := &launcher{launched: make(chan *fakeGuard, 4)}
	var restarted counter
	s := start(t, l, 5, &restarted)
	first := next(t, l)
	if code := status(s, "/json/version"); code != http.StatusTeapot {
		t.Fatalf("with a guard: %d, want the guard's answer", code)
	}

	l.mu.Lock() // holds the relaunch: the window between browsers
	first.die()
	waitFor(t, "the dead guard to be dropped", func() bool { return s.Current() == nil })
	for path, want := range map[string]int{
		"/healthz":               http.StatusOK,
		"/metrics":               http.StatusOK,
		"/readyz":                http.StatusServiceUnavailable,
		"/json/version":          http.StatusServiceUnavailable,
		"/devtools/browser/abcd": http.StatusServiceUnavailable,
		"/mcp":                   http.StatusServiceUnavailable,
	} {
		if code := status(s, path); code != want {
			t.Errorf("between browsers %s: %d, want %d", path, code, want)
		}
	}
	l.mu.Unlock()

	second := next(t, l)
	waitFor(t, "the new guard to be installed", func() bool { return s.Current() == second })
	if code := status(s, "/json/version"); code != http.StatusTeapot {
		t.Errorf("after the relaunch: %d, want the new guard's answer", code)
	}
	// The relaunch is counted once the new guard is installed, so a
	// moment after Current shows it (fresh-clone run 31 read 0 here).
	waitFor(t, "the relaunch to be counted", func() bool { return restarted.Load() >= 1 })
	if restarted.Load() != 1 {
		t.Errorf("Restarts counted %d times, want 1", restarted.Load())
	}
	l.mu.Lock()
	if len(l.lasts) != 2 || l.lasts[0] != nil || l.lasts[1] != first {
		t.Errorf("launch's last arguments %v, want [nil first]", l.lasts)
	}
	l.mu.Unlock()

	_ = s.Close()
	if !second.closed.Load() || second.agents.Load() == 0 {
		t.Errorf("Close: guard closed %v, CloseAgents %d times; want both", second.closed.Load(), second.agents.Load())
	}
	if s.Err() != nil {
		t.Errorf("Err after Close = %v, want nil (it did not give up)", s.Err())
	}
}

// TestGivesUp: with every relaunch failing, the supervisor stops by itself
// after MaxFailures within the window, and says why.
func TestGivesUp(t *testing.T) {
	l := &launcher{launched: make(chan *fakeGuard, 4)}
	var restarted counter
	s := start(t, l, 2, &restarted)
	first := next(t, l)
	l.mu.Lock()
	l.fail = true
	l.mu.Unlock()
	first.die()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("did not give up within 10 s")
	}
	if !errors.Is(s.Err(), errGaveUp) {
		t.Errorf("Err = %v, want it to wrap ErrGaveUp", s.Err())
	}
	if restarted.Load() != 0 {
		t.Errorf("Restarts counted %d times with every launch failing", restarted.Load())
	}
	_ = s.Close() // idempotent after giving up
}

// TestFirstLaunchFails: Start returns the error and closes the listener.
func TestFirstLaunchFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New[fakeGuard](ln, Options[*fakeGuard]{
		Launch: func(context.Context, *fakeGuard) (*fakeGuard, error) { return nil, errors.New("no browser") },
		Log:    slog.New(slog.DiscardHandler),
	})
	if err := s.Start(t.Context()); err == nil {
		t.Fatal("Start succeeded with a failing launch")
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		_ = c.Close()
		t.Error("the listener still accepts after a failed Start")
	}
}

func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		n    int
		want time.Duration
	}{
		{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {6, 30 * time.Second}, {100, 30 * time.Second},
	} {
		if got := Backoff(time.Second, c.n); got != c.want {
			t.Errorf("Backoff(1s, %d) = %v, want %v", c.n, got, c.want)
		}
	}
}

// TestDefaults: zero bounds get the documented defaults
// (cdpguard.SupervisorOptions), and with them the first relaunch waits
// 500 ms.
func TestDefaults(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New[fakeGuard](ln, Options[*fakeGuard]{})
	defer func() { _ = ln.Close(); s.stop() }()
	if o := s.opts; o.MaxFailures != 5 || o.Window != 5*time.Minute || o.Backoff != 500*time.Millisecond {
		t.Errorf("defaults %d %v %v, want 5 5m0s 500ms", o.MaxFailures, o.Window, o.Backoff)
	}
	if got := Backoff(s.opts.Backoff, 2); got != time.Second {
		t.Errorf("second relaunch waits %v, want 1s", got)
	}
}

// counter is a test's Counter.
type counter struct{ atomic.Int32 }

func (c *counter) Inc() { c.Add(1) }
