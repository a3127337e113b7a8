// Package policystate holds the policy in force: one immutable snapshot of
// the policy (a policy file's groups, or a static allowlist) behind an
// atomic pointer, the user keys that carry a policy group, and the
// reloads from the policy file, serialised under one lock. What follows
// from a change (tunnels rechecked, MCP clients told) is the owner's, by
// the Recheck and OnChange callbacks; the counts and the log lines are
// here. Tunnels are rechecked right after the swap, before the diff and
// the log line, so a host a reload removes loses its tunnels within the
// poll interval whatever the file's size.
//
// Every decision loads the snapshot once, so a reload never changes a
// decision half-way, costs a decision one atomic load, and never drops a
// connection, a context or a grant (they do not hold the policy; they look
// it up). It observes no CDP events.
package policystate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/policyfile"
)

// ErrPolicyFile is wrapped by the errors of a reload about the file, and by
// a refusal to set the policy in place when a file is its one source.
var ErrPolicyFile = errors.New("policy file")

// Deps is what a State needs from its owner.
type Deps struct {
	// File is the policy file, "" when the policy is set in place (Set).
	File string
	// Poll is how often Watch looks at the file (0: policyfile's default).
	Poll time.Duration
	// Log gets one line a reload or a refusal; nil discards them.
	Log *slog.Logger
	// Reloads counts a reload by result, "ok" or "error"
	// (NewReloadsCounter); nil: none.
	Reloads *prometheus.CounterVec
	// Recheck runs, under the reload lock, right after a new policy is
	// swapped in and before anything slow (the diff, the log line): it
	// closes the open tunnels the new policy refuses and returns how many,
	// for the log line. nil: none.
	Recheck func() (tunnelsClosed int)
	// OnChange runs, under the reload lock, after a reload that changed
	// the policy, once the diff says so: the rest of what follows (MCP
	// clients told). nil: nothing follows.
	OnChange func()
}

// State is the policy in force. The zero State and a nil *State hold an
// empty policy, which refuses everything.
type State struct {
	d   Deps
	cur atomic.Pointer[policyfile.Set]

	// lock serialises reloads, so two never interleave their side effects;
	// a channel of one, so the watcher can stop waiting for it when its
	// context ends (the guard's Close does not wait out a SIGHUP's reload).
	lock     chan struct{}
	lockOnce sync.Once
	sum      [32]byte // the content hash of the file in force, under lock
}

// New returns a State with s in force; sum is the content hash of the file
// s was read from (zero when not known, or s did not come from the file).
func New(s *policyfile.Set, sum [32]byte, d Deps) *State {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	st := &State{d: d, sum: sum}
	st.cur.Store(s)
	return st
}

// Rules returns the policy in force; a nil State, or one holding nothing,
// returns an empty policy, which refuses everything.
func (st *State) Rules() *policyfile.Set {
	if st != nil {
		if s := st.cur.Load(); s != nil {
			return s
		}
	}
	return policyfile.Static(nil, "")
}

// Group returns the policy group of the user whose key is key.
func (st *State) Group(key string) *policyfile.Group {
	return st.Rules().Group(GroupOfKey(key))
}

// PolicyOf returns the policy that judges the agents of key.
func (st *State) PolicyOf(key string) *policy.Policy { return st.Group(key).Policy }

// AllowAddrs lets the egress proxy dial the IP entries of key's group in
// the policy in force (loopback or private addresses the operator named),
// looked up at each dial, so reloads apply (egress.Scope.AllowAddrs).
func (st *State) AllowAddrs(key string) func(netip.Addr) bool {
	return func(a netip.Addr) bool {
		return slices.Contains(st.PolicyOf(key).IPEntries(), a.Unmap())
	}
}

// Reload reads the policy file and puts it in force, both under one lock,
// so that two reloads racing (SIGHUP and the watcher) apply the file in
// the order they read it and the last one read is the one in force. A
// file that does not parse changes nothing: the error is logged, counted
// and returned wrapping ErrPolicyFile. A file whose content is the one in
// force is not parsed again.
func (st *State) Reload(why string) error {
	return st.reload(context.Background(), why)
}

// reload is Reload that gives up waiting for the lock when ctx ends.
func (st *State) reload(ctx context.Context, why string) error {
	if st.d.File == "" {
		return fmt.Errorf("%w: no policy file to reload (Config.PolicyFile is empty)", ErrPolicyFile)
	}
	if !st.acquire(ctx) {
		return fmt.Errorf("%w: reload abandoned: %w", ErrPolicyFile, ctx.Err())
	}
	defer st.release()
	s, sum, err := policyfile.ReadNew(st.d.File, st.sum)
	if err != nil {
		st.refused(err)
		return fmt.Errorf("%w: %w", ErrPolicyFile, err)
	}
	if s == nil { // the content in force
		st.count("ok")
		st.d.Log.Info("policy reloaded: no change", "why", why)
		return nil
	}
	st.applyLocked(s, sum, why)
	return nil
}

// acquire takes the reload lock, or returns false when ctx ends first.
func (st *State) acquire(ctx context.Context) bool {
	st.lockOnce.Do(func() { st.lock = make(chan struct{}, 1) })
	select {
	case st.lock <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (st *State) release() { <-st.lock }

// Set puts s in force as a reload does. It is refused, wrapping
// ErrPolicyFile, when a policy file is the policy's one source.
func (st *State) Set(s *policyfile.Set, why string) error {
	if err := st.Settable(); err != nil {
		return err
	}
	st.acquire(context.Background())
	defer st.release()
	st.applyLocked(s, [32]byte{}, why)
	return nil
}

// Settable returns nil when the policy may be set in place (Set), and
// otherwise an error wrapping ErrPolicyFile: a policy file is its one
// source.
func (st *State) Settable() error {
	if st.d.File != "" {
		return fmt.Errorf("%w: the policy comes from %s; edit the file instead", ErrPolicyFile, st.d.File)
	}
	return nil
}

// Watch polls the policy file until ctx ends, reloading it when it
// changes. Without a file it returns at once.
func (st *State) Watch(ctx context.Context) {
	if st.d.File == "" {
		return
	}
	if !st.acquire(ctx) {
		return
	}
	sum := st.sum
	st.release()
	// The watcher only says that the file changed: the file is read again
	// under the lock (reload), so a SIGHUP racing it cannot put an older
	// reading in force after a newer one. A reload waiting for the lock
	// gives up when ctx ends.
	w := policyfile.NewWatcher(st.d.File, sum, st.d.Poll, func(err error) {
		if err != nil {
			st.refused(err)
			return
		}
		_ = st.reload(ctx, "file changed") // a refusal is logged and counted there
	})
	w.Run(ctx)
}

// refused logs and counts a policy file that could not be loaded.
func (st *State) refused(err error) {
	st.count("error")
	st.d.Log.Error("policy file refused; the policy in force is unchanged", "err", err)
}

func (st *State) count(result string) {
	if st.d.Reloads != nil {
		st.d.Reloads.WithLabelValues(result).Inc()
	}
}

// applyLocked puts s in force with the lock held, closes the tunnels it
// refuses (Recheck) at once, then compares it with the old policy, does
// the rest of what follows (OnChange) and logs what changed. sum is the
// file's content hash (zero when not known: the watcher's own is kept).
func (st *State) applyLocked(s *policyfile.Set, sum [32]byte, why string) {
	if sum != ([32]byte{}) {
		st.sum = sum
	}
	old := st.cur.Swap(s)
	closed := 0
	if st.d.Recheck != nil {
		closed = st.d.Recheck()
	}
	diff := policyfile.Compare(old, s)
	st.count("ok")
	if diff.Empty() {
		st.d.Log.Info("policy reloaded: no change", "why", why, "tunnelsClosed", closed)
		return
	}
	if st.d.OnChange != nil {
		st.d.OnChange()
	}
	allowed := s.Default().Policy.Origins()
	st.d.Log.Info("policy reloaded: "+diff.String(), "why", why, "tunnelsClosed", closed,
		"allowed", firstOf(allowed, maxLogged), "allowedCount", len(allowed))
}

// maxLogged bounds the allow entries the reload's log line lists (the
// count is logged too, and GET /policy has them all) and the group names
// an unknown group's refusal lists: a file may hold thousands of either.
const maxLogged = 20

// firstOf returns list cut to n entries, with a last one saying how many
// more there were.
func firstOf(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(list[:n:n], fmt.Sprintf("(and %d more)", len(list)-n))
}

// NewReloadsCounter registers the policy reload counter on reg, for
// Deps.Reloads.
func NewReloadsCounter(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cdpguard_policy_reloads_total",
		Help: "Policy reloads (file change, SIGHUP, SetPolicy), by result: ok, or error (a bad file: the policy in force was kept).",
	}, []string{"result"})
	reg.MustRegister(c)
	return c
}
