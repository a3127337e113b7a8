// Package users keeps one browser context per user and knows which targets
// and contexts belong to whom. A user is keyed by a request header; the
// guard creates the user's primary context on first use, the user may create
// more, and a user idle for longer than the idle period loses them all.
package users

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/pages"
)

// ErrClosed is returned by Acquire once Run has ended (the guard is closing).
var ErrClosed = errors.New("user registry closed")

// Contexts creates and disposes browser contexts.
type Contexts interface {
	Create(ctx context.Context, key string) (string, error)
	Dispose(ctx context.Context, id string) error
}

// Targets is what the registry needs of the page registry
// (internal/pages): the context of each target (destroyed ones still
// answered a while, for late events), whether it is web content, and the
// live targets. Its methods never call back into the users registry, so
// they may be called under Registry.mu.
type Targets interface {
	ContextOf(targetID string) (contextID string, ok bool)
	NotWeb(targetID string) string
	Live() []pages.Target
}

// User is one user's share of the browser.
type User struct {
	// Key is the header value ("" for the shared fallback user).
	Key string
	// Primary is the context the guard created; to clients it is the
	// default context.
	Primary string

	ready chan struct{} // closed when Primary is set or creation failed
	err   error
	// guarded by Registry.mu
	contexts map[string]bool
	conns    int
	last     time.Time
}

// Registry holds every user. Its zero value is not usable; use New.
type Registry struct {
	ctxs    Contexts
	targets Targets // target → context (internal/pages)
	idle    time.Duration
	log     *slog.Logger
	now     func() time.Time

	// mu is never held while the page registry (targets) is asked: its
	// answer is read first, then the owners under mu.
	mu      sync.Mutex
	closed  bool
	users   map[string]*User
	owner   map[string]*User // context id → user
	windows map[int64]string // window id → context id of the targets it shows
	stats   Stats
	limits  Limits // caps on new users (limits.go)
	bucket  bucket // the new users' token bucket
}

// Stats counts what the registry did.
type Stats struct {
	Users, Connections, Disposed int
}

// New returns a Registry whose targets' contexts are those targets
// reports. idle <= 0 never disposes.
func New(ctxs Contexts, targets Targets, idle time.Duration, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{
		ctxs: ctxs, targets: targets, idle: idle, log: log, now: time.Now,
		users:   map[string]*User{},
		owner:   map[string]*User{},
		windows: map[int64]string{},
	}
}

// AcquireChecked is Acquire followed by check once the user is
// registered (a rule two first requests racing for one key both passed
// before: the policy groups, policystate.OtherGroupLive). On a refusal the
// user is released and, when this call made the user's context, that
// context is disposed unless another connection holds it (ErrInUse), so
// two refused racers do not lock the user out until it idles.
func (r *Registry) AcquireChecked(ctx context.Context, key string, check func() error) (*User, error) {
	existed := r.Lookup(key) != nil
	u, err := r.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := check(); err != nil {
		r.Release(u)
		if !existed {
			_ = r.DisposeNow(ctx, key)
		}
		return nil, err
	}
	return u, nil
}

// Acquire returns the user for key, creating the user's primary context on
// first use, and counts one more connection. Every Acquire needs a Release.
// A new user past a cap (SetLimits) is refused with a *CapError; existing
// users are never refused.
func (r *Registry) Acquire(ctx context.Context, key string) (*User, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	u := r.users[key]
	creator := u == nil
	if creator {
		if e := r.admitNew(); e != nil {
			r.mu.Unlock()
			return nil, e
		}
		u = &User{Key: key, ready: make(chan struct{}), contexts: map[string]bool{}}
		r.users[key] = u
	}
	u.conns++
	u.last = r.now()
	r.mu.Unlock()

	if creator {
		id, err := r.ctxs.Create(ctx, key)
		r.mu.Lock()
		if err != nil {
			u.err = fmt.Errorf("create browser context for user %q: %w", clip.String(key), err)
			delete(r.users, key)
		} else {
			u.Primary = id
			u.contexts[id] = true
			r.owner[id] = u
			r.log.Info("user context created", "user", clip.String(key), "context", id)
		}
		close(u.ready)
		r.mu.Unlock()
	}
	select {
	case <-u.ready:
	case <-ctx.Done():
		r.Release(u)
		return nil, ctx.Err()
	}
	if u.err != nil {
		r.Release(u)
		return nil, u.err
	}
	return u, nil
}

// Lookup returns the user for key without creating it.
func (r *Registry) Lookup(key string) *User {
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[key]
	if u == nil || u.Primary == "" {
		return nil
	}
	return u
}

// Release ends one connection of u.
func (r *Registry) Release(u *User) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u.conns > 0 {
		u.conns--
	}
	u.last = r.now()
}

// Touch records activity of u.
func (r *Registry) Touch(u *User) {
	r.mu.Lock()
	u.last = r.now()
	r.mu.Unlock()
}

// AddContext records a context u created.
func (r *Registry) AddContext(u *User, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	u.contexts[id] = true
	r.owner[id] = u
}

// RemoveContext forgets a disposed context.
func (r *Registry) RemoveContext(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if u := r.owner[id]; u != nil {
		delete(u.contexts, id)
	}
	delete(r.owner, id)
	r.forgetWindows(id)
}

// OwnsContext reports whether context id is u's.
func (r *Registry) OwnsContext(u *User, id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owner[id] == u
}

// Contexts returns u's contexts, primary first.
func (r *Registry) Contexts(u *User) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []string{u.Primary}
	for id := range u.contexts {
		if id != u.Primary {
			out = append(out, id)
		}
	}
	return out
}

// OwnsTarget reports whether target id is in one of u's contexts (a
// destroyed target still is, a while: late events are attributed).
func (r *Registry) OwnsTarget(u *User, targetID string) bool {
	c, ok := r.targets.ContextOf(targetID)
	if !ok {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owner[c] == u
}

// Targets returns the live targets in u's contexts.
func (r *Registry) Targets(u *User) []string {
	live := r.targets.Live()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, t := range live {
		if r.owner[t.Context] == u {
			out = append(out, t.ID)
		}
	}
	return out
}

// NotWeb returns why a target is not web content, or "" when it is (or is
// unknown): the page registry's answer, for the isolation that asks the
// users registry about targets.
func (r *Registry) NotWeb(targetID string) string { return r.targets.NotWeb(targetID) }

// Stats returns counters.
func (r *Registry) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Users = len(r.users)
	s.Connections = 0
	for _, u := range r.users {
		s.Connections += u.conns
	}
	return s
}

// Run disposes idle users' contexts until ctx ends.
func (r *Registry) Run(ctx context.Context) {
	every := r.idle / 4
	if every <= 0 || every > 30*time.Second {
		every = 30 * time.Second
	}
	if every < 50*time.Millisecond {
		every = 50 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.mu.Lock()
			r.closed = true
			r.mu.Unlock()
			return
		case <-t.C:
			r.sweep(ctx)
		}
	}
}

// retire forgets user key u and its contexts' ownership and counts it
// disposed; the caller holds r.mu and disposes the contexts after unlocking.
func (r *Registry) retire(key string, u *User) {
	delete(r.users, key)
	for id := range u.contexts {
		delete(r.owner, id)
		r.forgetWindows(id)
	}
	r.stats.Disposed++
}

func (r *Registry) sweep(ctx context.Context) {
	now := r.now()
	var idle []*User
	r.mu.Lock()
	if r.idle > 0 {
		for k, u := range r.users {
			if u.conns == 0 && u.Primary != "" && now.Sub(u.last) > r.idle {
				idle = append(idle, u)
				r.retire(k, u)
			}
		}
	}
	r.mu.Unlock()
	for _, u := range idle {
		for id := range u.contexts {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := r.ctxs.Dispose(dctx, id); err != nil {
				r.log.Warn("disposing an idle user's context failed", "user", clip.String(u.Key), "context", id, "err", err)
			}
			cancel()
		}
		r.log.Info("idle user's context disposed", "user", clip.String(u.Key), "idle", r.idle.String())
	}
}
