package admission

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// entryRig counts what an entry took from the guard and gave back.
type entryRig struct {
	ready, closing    bool
	entered, exited   int
	acquired, release int
	acquireErr        error
}

func (r *entryRig) set() *Set {
	return New(Deps{
		Ready: func() bool { return r.ready },
		Enter: func() bool { r.entered++; return !r.closing },
		Exit:  func() { r.exited++ },
		Ctx:   context.Background(),
		Acquire: func(context.Context, string) (*users.User, error) {
			r.acquired++
			return &users.User{Key: "alice"}, r.acquireErr
		},
		Release: func(*users.User) { r.release++ },
		OnDrop:  func(*relay.Agent) {},
		Log:     slog.New(slog.DiscardHandler),
	})
}

// TestEnterRefusals: nothing is entered before the guard serves, nor once
// Close began.
func TestEnterRefusals(t *testing.T) {
	r := &entryRig{}
	if _, err := r.set().Enter(); !errors.Is(err, ErrNotReady) || r.entered != 0 {
		t.Fatalf("not ready: %v, %d entered", err, r.entered)
	}
	r.ready, r.closing = true, true
	if _, err := r.set().Enter(); !errors.Is(err, ErrClosing) {
		t.Fatalf("closing: %v", err)
	}
}

// TestAdmitRefusals: a user that cannot be held, or that a rule refuses,
// leaves nothing held; the entry ends exactly once.
func TestAdmitRefusals(t *testing.T) {
	r := &entryRig{ready: true, acquireErr: errors.New("too many contexts")}
	set := r.set()
	e, err := set.Enter()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Admit(context.Background(), nil, Spec{Key: "alice"}, nil); err == nil || r.release != 0 {
		t.Fatalf("acquire failed: %v, %d releases", err, r.release)
	}
	r.acquireErr = nil
	err = e.Admit(context.Background(), nil, Spec{Key: "alice"}, func(u *users.User) string { return "cdpguard: no such target for " + u.Key })
	var refused *Refused
	if !errors.As(err, &refused) || refused.Msg != "cdpguard: no such target for alice" || r.release != 1 {
		t.Fatalf("refused by a rule: %v, %d releases", err, r.release)
	}
	if e.Agent() != nil {
		t.Fatal("a refused entry has an agent")
	}
	if err := e.Serve(func(err error) error { return err }); err == nil {
		t.Fatal("served an agent never admitted")
	}
	e.End()
	if r.entered != 1 || r.exited != 1 {
		t.Fatalf("entered %d, exited %d; want 1, 1", r.entered, r.exited)
	}
}

// TestPipeRefusals: an in-process agent that is not admitted starts
// nothing (no goroutine, no admitted callback) and leaves nothing entered
// or held.
func TestPipeRefusals(t *testing.T) {
	admitted := func(*relay.Agent) { t.Error("admitted ran for an agent never admitted") }
	clean := func(err error) error { return err }
	r := &entryRig{}
	if ended, err := r.set().Pipe(context.Background(), nil, Spec{Key: "alice"}, admitted, clean); !errors.Is(err, ErrNotReady) || ended != nil || r.entered != 0 {
		t.Fatalf("not ready: %v, %d entered", err, r.entered)
	}
	r = &entryRig{ready: true, acquireErr: errors.New("too many contexts")}
	if ended, err := r.set().Pipe(context.Background(), nil, Spec{Key: "alice"}, admitted, clean); err == nil || ended != nil {
		t.Fatalf("acquire failed: %v", err)
	}
	if r.entered != 1 || r.exited != 1 || r.release != 0 {
		t.Fatalf("entered %d, exited %d, released %d; want 1, 1, 0", r.entered, r.exited, r.release)
	}
}
