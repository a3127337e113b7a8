// Package admission admits agent connections to the guard's browser
// connection and keeps them: every kind of agent (a WebSocket client, the
// MCP tools' in-process connection) gets the same interceptor, event
// filter, per-user fairness share and registration, so no kind can skip a
// rule. It tells the user's connections what the guard decided (Notify),
// evicts sessions and closes them all. It observes no CDP events.
package admission

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/isolation"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/shares"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Agent is what the guard keeps of one admitted agent connection. It is
// the connection's relay.Hooks: its events go through the guard's filter.
// Its commands go through the guard's pipeline, bound to it once at
// admission (Pipeline.For), which the relay's agent calls itself.
type Agent struct {
	User        *users.User
	Iso         *isolation.Conn // the connection as isolation sees it (its user)
	GuardEvents atomic.Bool     // Guard.enable was called
	unshare     func()          // releases the user's fairness share

	set *Set
	cut func(kind, reason string) // counts and logs a cut-off (bounds.Metrics.OnCutOff)
}

// Spec names one agent connection: who it is for and what it is.
type Spec struct {
	Name     string      // for logs: the remote address, or "mcp"
	Key      string      // the user key (session header value)
	TargetID string      // for /devtools/page/<id>; empty for browser connections
	User     *users.User // the user Entry.Admit holds
}

// Users is the users registry (internal/users.Registry) as admission
// uses it.
type Users interface {
	// Touch records a user's activity for idle disposal.
	Touch(u *users.User)
	// Release lets go of a user Acquire held.
	Release(u *users.User)
}

// Guard is the guard's side of every agent connection: the user it
// holds, the event filter each connection goes through, and what follows
// an agent's end (its commands go through the Pipeline). cdpguard
// implements it.
type Guard interface {
	// Acquire holds the user of key (making their browser context on
	// first use); Users.Release lets go of it.
	Acquire(ctx context.Context, key string) (*users.User, error)
	// Filter reports whether event e reaches agent a.
	Filter(st *Agent, a *relay.Agent, e *cdpmsg.Envelope) bool
	// BeforeDetach runs as an agent goes, before the relay detaches its
	// sessions (relay.Hooks.BeforeDetach).
	BeforeDetach(a *relay.Agent)
	// Dropped is told of an agent that is gone.
	Dropped(a *relay.Agent)
}

// Pipeline judges every agent command, whatever the agent's kind: the
// guard's command pipeline.
type Pipeline interface {
	// For returns the pipeline bound to admitted agent st: the agent's
	// relay.Interceptor, which the relay hands each of its commands.
	For(st *Agent) relay.Interceptor
}

// Life is the guard's life as agents see it.
type Life interface {
	// Ready reports whether the guard serves agents.
	Ready() bool
	// Enter registers an agent Close waits for, false once Close began;
	// Exit ends that registration.
	Enter() bool
	Exit()
}

// Browser makes agents on the browser connection (relay.Mux).
type Browser interface {
	NewAgent(ctx context.Context, conn relay.AgentConn, opts relay.AgentOptions) (*relay.Agent, error)
}

// Deps are what admitting an agent takes from the guard.
type Deps struct {
	Guard    Guard
	Pipeline Pipeline
	// Users records a user's activity for idle disposal (Touch) and lets
	// go of a user an admission held (Release): the users registry.
	Users Users
	// Bounds are the relay's byte bounds.
	Bounds relay.Bounds
	// Metrics count the bounds' refusals and cut-offs.
	Metrics *bounds.Metrics
	Log     *slog.Logger

	// What Enter, Admit and Serve take (entry.go):
	Life Life
	// Ctx ends when the guard closes: every agent is served under it.
	Ctx context.Context
	// Browser is the browser connection agents are relayed onto.
	Browser Browser
	// MaxConnsPerUser caps one user's agent connections (<= 0: no cap); a
	// connection past it is refused with a *users.CapError and counted
	// (Metrics).
	MaxConnsPerUser int
}

// Set is the guard's agent connections and the users' fairness shares.
type Set struct {
	deps   Deps
	mu     sync.Mutex
	m      map[*relay.Agent]*Agent
	shares *shares.Table[*relay.Share] // user key → the share of all the user's connections
}

// New returns an empty Set.
func New(deps Deps) *Set {
	return &Set{deps: deps, m: map[*relay.Agent]*Agent{}, shares: newShares()}
}

// admit relays conn on mux as one agent of s.User, in the user's share
// (Entry.Hold holds it; the agent releases it with unshare when dropped).
// The caller runs a.Serve and then calls Drop (Entry.Serve). On an error
// the caller still holds the share.
func (set *Set) admit(ctx context.Context, conn relay.AgentConn, s Spec, share *relay.Share, unshare func()) (*relay.Agent, error) {
	st := &Agent{User: s.User, Iso: isolation.NewConn(s.User), unshare: unshare, set: set,
		cut: set.deps.Metrics.OnCutOff(set.deps.Log, s.Name, clip.String(s.Key))}
	a, err := set.deps.Browser.NewAgent(ctx, conn, relay.AgentOptions{
		Name:        s.Name,
		TargetID:    s.TargetID,
		Interceptor: set.deps.Pipeline.For(st),
		Hooks:       st,
		Share:       share,
		Bounds:      set.deps.Bounds,
	})
	if err != nil {
		return nil, err
	}
	set.mu.Lock()
	set.m[a] = st
	set.mu.Unlock()
	set.deps.Log.Info("agent connected", "remote", s.Name, "user", clip.String(s.Key), "target", s.TargetID)
	return a, nil
}

// FilterEvent reports whether the guard lets event e reach the agent.
func (st *Agent) FilterEvent(a *relay.Agent, e *cdpmsg.Envelope) bool {
	return st.set.deps.Guard.Filter(st, a, e)
}

// Activity records the agent's activity for idle disposal; the relay
// tells it at most once a second, so that busy agents do not contend on
// the registry.
func (st *Agent) Activity() { st.set.deps.Users.Touch(st.User) }

// CutOff counts and logs the agent cut off by a bound.
func (st *Agent) CutOff(kind, reason string) { st.cut(kind, reason) }

// Throttled counts the agent's commands no longer read for a while.
func (st *Agent) Throttled() { st.set.deps.Metrics.Throttled() }

// Dropped counts a reply or event over the one-message bound.
func (st *Agent) Dropped(kind string) { st.set.deps.Metrics.Dropped(kind) }

// BeforeDetach lets the guard make the agent's sessions safe to detach.
func (st *Agent) BeforeDetach(a *relay.Agent) { st.set.deps.Guard.BeforeDetach(a) }

// Drop forgets an agent whose Serve returned.
func (set *Set) Drop(a *relay.Agent) {
	set.mu.Lock()
	st := set.m[a]
	delete(set.m, a)
	set.mu.Unlock()
	if st != nil {
		st.unshare()
	}
	set.deps.Guard.Dropped(a)
}

// Notify sends the guard's event method with params to the connections
// whose user to reports true and that sent Guard.enable. SendEvent only
// queues: it never writes to the socket under the lock.
func (set *Set) Notify(to func(*users.User) bool, method string, params []byte) {
	set.mu.Lock()
	defer set.mu.Unlock()
	for a, st := range set.m {
		if to(st.User) && st.GuardEvents.Load() {
			a.SendEvent(method, params)
		}
	}
}

// NotifyUser is Notify to u's connections.
func (set *Set) NotifyUser(u *users.User, method string, params []byte) {
	set.Notify(func(v *users.User) bool { return v == u }, method, params)
}

// Evict ends every agent session on targetID with reason.
func (set *Set) Evict(targetID, reason string) {
	set.mu.Lock()
	agents := make([]*relay.Agent, 0, len(set.m))
	for a := range set.m {
		agents = append(agents, a)
	}
	set.mu.Unlock()
	for _, a := range agents {
		a.Evict(targetID, reason)
	}
}

// CloseAll ends every agent connection with code and reason (shutdown,
// browser restart), so that clients learn why rather than seeing a bare
// close. Agents' in-flight commands fail with them.
func (set *Set) CloseAll(code int, reason string) {
	set.mu.Lock()
	defer set.mu.Unlock()
	for a := range set.m {
		a.Close(code, reason)
	}
}

// QueuedBytes returns the bytes queued for all users' connections and for
// the user with the most (the bounds gauges).
func (set *Set) QueuedBytes() (total, most int64) {
	set.shares.Range(func(sh *relay.Share) {
		n := sh.QueuedBytes()
		total += n
		most = max(most, n)
	})
	return total, most
}

// Shares returns the table of per-user shares (tests: pruning).
func (set *Set) Shares() *shares.Table[*relay.Share] { return set.shares }
