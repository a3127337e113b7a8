package cdpguard

import (
	"context"
	"errors"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestSupervisorGivesUp kills the managed browser twice with MaxFailures 1:
// the first death is followed by a relaunch (counted in
// cdpguard_browser_restarts_total), the second makes the supervisor give
// up, with ErrGaveUp, so that `cdpguard serve` exits non-zero.
func TestSupervisorGivesUp(t *testing.T) {
	needBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := Supervise(ctx, Config{}, SupervisorOptions{MaxFailures: 1, Window: time.Minute, Backoff: 500 * time.Millisecond}) // the 503 checks run within the backoff
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kill := func() {
		t.Helper()
		g := s.current()
		if g == nil || g.proc == nil {
			t.Fatal("no current guard with a launched browser")
		}
		if err := syscall.Kill(g.proc.Pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-g.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("guard not done 10s after its browser was killed")
		}
	}
	first := s.current()
	ws := first.WebSocketURL()
	kill()
	// Between browsers every endpoint request is refused, fail closed.
	for _, path := range []string{"/json/version", "/json/list", "/devtools/browser/" + first.about.id} {
		resp, err := http.Get(s.URL() + path)
		if err != nil {
			t.Fatalf("GET %s between browsers: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET %s between browsers: %d, want 503", path, resp.StatusCode)
		}
	}
	for end := time.Now().Add(30 * time.Second); !s.Ready() || s.current() == first; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no relaunched browser within 30s")
		}
	}
	resp, err := http.Get(s.URL() + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/readyz after the relaunch: %v %v", resp, err)
	}
	resp.Body.Close()
	// The old /devtools/browser/<id> URL reaches the relaunched browser (any
	// id is accepted, so clients behind a balancer connect: see
	// docs/decisions/2026-12-01-scale-out.md), never the dead one.
	c, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		t.Fatalf("the old WebSocket URL after the relaunch: %v", err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	kill()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("supervisor did not give up after the second death")
	}
	if err := s.Err(); !errors.Is(err, ErrGaveUp) {
		t.Fatalf("Err() = %v, want ErrGaveUp", err)
	}
	if _, err := http.Get(s.URL() + "/readyz"); err == nil {
		t.Error("the endpoint still answers after the supervisor gave up")
	}
}
