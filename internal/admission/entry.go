package admission

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// The refusals of an agent before anything is made for it.
var (
	ErrNotReady = errors.New("not ready")     // the guard does not serve yet (or any more)
	ErrClosing  = errors.New("shutting down") // Close began
)

// Refused is an admission a rule refused (the connection's target is not
// its user's, or not web content); Msg is the whole refusal. A WebSocket
// is closed with the policy code for it.
type Refused struct{ Msg string }

func (r *Refused) Error() string { return r.Msg }

// admitBound bounds holding the user and admitting the agent: a first
// connection makes the user's browser context.
const admitBound = 10 * time.Second

// Entry is one agent connection on its way in, whatever its kind (a
// WebSocket, the MCP tools' pipe): entered, so Close waits for it, then
// its user and one of the user's connection slots held (Hold), then
// admitted, then served. Every kind takes this one path, so none skips a
// check or leaks a user or a share.
type Entry struct {
	set     *Set
	ended   bool
	a       *relay.Agent
	u       *users.User
	share   *relay.Share // the user's fairness share, held with u
	unshare func()
	s       Spec
}

// Enter starts admitting one agent: ErrNotReady before the guard serves,
// ErrClosing once Close began (Life.Enter). The entry ends with Serve, or
// with End when it is never served.
func (set *Set) Enter() (*Entry, error) {
	if !set.deps.Life.Ready() {
		return nil, ErrNotReady
	}
	if !set.deps.Life.Enter() {
		return nil, ErrClosing
	}
	return &Entry{set: set}, nil
}

// Hold holds the user of key (making their browser context on first use,
// within admitBound of ctx) and one of the user's connection slots. A
// WebSocket calls it before the upgrade, so that a cap (a new user past
// the users cap or the new-users rate, a user at its connection cap:
// *users.CapError) is refused with an HTTP status; Admit calls it when
// nothing is held yet. On an error nothing stays held.
func (e *Entry) Hold(ctx context.Context, key string) error {
	if e.u != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, admitBound)
	defer cancel()
	u, err := e.set.deps.Guard.Acquire(ctx, key)
	if err != nil {
		return err
	}
	limit := e.set.deps.MaxConnsPerUser
	share, unshare, ok := e.set.shares.TryAcquire(key, limit)
	if !ok {
		e.set.deps.Users.Release(u)
		e.set.deps.Metrics.Capped(users.CapConnections)
		return &users.CapError{Cap: users.CapConnections, Msg: fmt.Sprintf("connections cap (--max-connections-per-user=%d) reached: this user has as many connections as one user may", limit)}
	}
	e.u, e.share, e.unshare = u, share, unshare
	return nil
}

// letGo releases what Hold holds, when no agent took it over.
func (e *Entry) letGo() {
	if e.u != nil && e.a == nil {
		e.unshare()
		e.set.deps.Users.Release(e.u)
		e.u, e.share, e.unshare = nil, nil, nil
	}
}

// Admit holds the user of s.Key, unless Hold did, and relays conn as one
// agent of theirs (within admitBound of ctx). check, when not nil, returns
// why the user may not have this connection (a *Refused), or "". On an
// error nothing stays held.
func (e *Entry) Admit(ctx context.Context, conn relay.AgentConn, s Spec, check func(*users.User) string) error {
	if err := e.Hold(ctx, s.Key); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, admitBound)
	defer cancel()
	if check != nil {
		if msg := check(e.u); msg != "" {
			e.letGo()
			return &Refused{Msg: msg}
		}
	}
	s.User = e.u
	a, err := e.set.admit(ctx, conn, s, e.share, e.unshare)
	if err != nil {
		e.letGo()
		return err
	}
	e.a, e.s = a, s
	return nil
}

// Agent is the admitted agent; nil before Admit.
func (e *Entry) Agent() *relay.Agent { return e.a }

// Serve relays the admitted agent until its connection ends or the guard
// closes it, then forgets it, releases its user and ends the entry. clean
// turns the connection's ordinary end into nil.
func (e *Entry) Serve(clean func(error) error) error {
	defer e.End()
	if e.a == nil {
		return fmt.Errorf("serve an agent that was not admitted")
	}
	err := clean(e.a.Serve(e.set.deps.Ctx))
	e.set.Drop(e.a)
	e.set.deps.Users.Release(e.u)
	e.set.deps.Log.Info("agent disconnected", "remote", e.s.Name, "user", clip.String(e.s.Key), "err", err)
	return err
}

// End ends an entry that is not served, releasing what Hold held; after
// Serve it does nothing.
func (e *Entry) End() {
	e.letGo()
	if !e.ended {
		e.ended = true
		e.set.deps.Life.Exit()
	}
}

// Pipe admits an in-process agent of s.Key (the MCP tools' pipe) and
// serves it from a goroutine of its own, which the guard's Close waits for
// (Enter): the one path of a WebSocket agent, with the serving started
// here because nothing else owns it. admitted, when not nil, runs once the
// agent exists, before anything is relayed; clean is Serve's. The channel
// returned is closed when the agent has ended.
func (set *Set) Pipe(ctx context.Context, conn relay.AgentConn, s Spec, admitted func(*relay.Agent), clean func(error) error) (<-chan struct{}, error) {
	e, err := set.Enter()
	if err != nil {
		return nil, err
	}
	if err := e.Admit(ctx, conn, s, nil); err != nil {
		e.End()
		return nil, err
	}
	if admitted != nil {
		admitted(e.a)
	}
	ended := make(chan struct{})
	go func() { // the agent: ends when the pipe closes or the guard closes it
		defer close(ended)
		_ = e.Serve(clean)
	}()
	return ended, nil
}
