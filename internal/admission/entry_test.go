package admission

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
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

func (r *entryRig) Touch(*users.User)   {}
func (r *entryRig) Release(*users.User) { r.release++ }

// The rig is the guard's Life, Guard and Pipeline.
func (r *entryRig) Ready() bool { return r.ready }
func (r *entryRig) Enter() bool { r.entered++; return !r.closing }
func (r *entryRig) Exit()       { r.exited++ }

func (r *entryRig) Acquire(context.Context, string) (*users.User, error) {
	r.acquired++
	return &users.User{Key: "alice"}, r.acquireErr
}

func (r *entryRig) Filter(*Agent, *relay.Agent, *cdpmsg.Envelope) bool { return true }
func (r *entryRig) For(*Agent) relay.Interceptor                       { return nil } // every command forwarded
func (r *entryRig) BeforeDetach(*relay.Agent)                          {}
func (r *entryRig) Dropped(*relay.Agent)                               {}

func (r *entryRig) set() *Set {
	return New(Deps{
		Life:     r,
		Guard:    r,
		Pipeline: r,
		Ctx:      context.Background(),
		Users:    r,
		Log:      slog.New(slog.DiscardHandler),
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

// TestConnectionCap: a user holds at most MaxConnsPerUser entries at once;
// the one past it is refused with a *users.CapError naming the cap,
// counted, and holds nothing; an entry that ends frees its slot, and
// another user is not affected.
func TestConnectionCap(t *testing.T) {
	r := &entryRig{ready: true}
	reg := prometheus.NewRegistry()
	m := bounds.NewMetrics(reg, func() bounds.Stats { return nil })
	set := r.set()
	set.deps.MaxConnsPerUser = 2
	set.deps.Metrics = m
	hold := func(key string) (*Entry, error) {
		e, err := set.Enter()
		if err != nil {
			t.Fatal(err)
		}
		return e, e.Hold(context.Background(), key)
	}
	first, err1 := hold("alice")
	second, err2 := hold("alice")
	if err1 != nil || err2 != nil {
		t.Fatalf("within the cap: %v, %v", err1, err2)
	}
	third, err := hold("alice")
	var capErr *users.CapError
	if !errors.As(err, &capErr) || capErr.Cap != users.CapConnections || !strings.Contains(err.Error(), "--max-connections-per-user=2") || capErr.Status() != http.StatusTooManyRequests {
		t.Fatalf("past the cap: %v", err)
	}
	third.End()
	if r.acquired-r.release != 2 {
		t.Fatalf("%d users held after the refusal, want 2", r.acquired-r.release)
	}
	if got := capRefused(t, reg, users.CapConnections); got != 1 {
		t.Fatalf("cdpguard_cap_refused_total{cap=%q} = %v, want 1", users.CapConnections, got)
	}
	other, err := hold("bob")
	if err != nil {
		t.Fatalf("another user: %v", err)
	}
	other.End()
	first.End()
	again, err := hold("alice")
	if err != nil {
		t.Fatalf("after one connection ended: %v", err)
	}
	again.End()
	second.End()
	if r.acquired != r.release || r.entered != r.exited || set.shares.Held() != 0 {
		t.Fatalf("acquired %d, released %d, entered %d, exited %d, shares held %d", r.acquired, r.release, r.entered, r.exited, set.shares.Held())
	}
}

// capRefused returns cdpguard_cap_refused_total{cap=c} in reg.
func capRefused(t *testing.T, reg *prometheus.Registry, c string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "cdpguard_cap_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cap" && l.GetValue() == c {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no cdpguard_cap_refused_total{cap=%q}", c)
	return 0
}
