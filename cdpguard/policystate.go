package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/policyfile"
	"github.com/cdpguard/cdpguard/internal/users"
)

// ErrPolicyFile is wrapped by ReloadPolicy's errors about the file, and by
// SetPolicy when a policy file is the policy's one source.
var ErrPolicyFile = errors.New("policy file")

// policyState is the policy in force: one immutable snapshot behind an
// atomic pointer. Every decision loads it once, so a reload never changes
// a decision half-way, costs a decision one atomic load, and never drops a
// connection, a context or a grant (they do not hold the policy; they look
// it up).
type policyState struct {
	cur atomic.Pointer[policyfile.Set]

	mu  sync.Mutex // serialises reloads, so two never interleave their side effects
	sum [32]byte   // the content hash of the file in force
}

// groupSep joins a user's session key and group in the user's key. No
// HTTP header value holds a NUL, so no session value can pose as another
// group's user.
const groupSep = "\x00"

// groupKey returns the user key of session in group ("" is the default
// group, whose keys are the session value alone, as before groups).
func groupKey(session, group string) string {
	if group == "" {
		return session
	}
	return session + groupSep + group
}

// groupOfKey returns the group a user key was made for.
func groupOfKey(key string) string {
	if i := strings.IndexByte(key, 0); i >= 0 {
		return key[i+1:]
	}
	return ""
}

// loadPolicy builds the starting policy from cfg: the policy file when
// one is given (then Allow, Block and Instructions must be empty: the file
// is the one source), else Allow, Block and Instructions.
func loadPolicy(cfg Config) (*policyfile.Set, [32]byte, error) {
	if cfg.PolicyFile == "" {
		p, err := policy.Parse(cfg.Allow, cfg.Block)
		if err != nil {
			return nil, [32]byte{}, setupError("", err)
		}
		return policyfile.Static(p, cfg.Instructions), [32]byte{}, nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"Allow", anyEntry(cfg.Allow)}, {"Block", anyEntry(cfg.Block)}, {"Instructions", strings.TrimSpace(cfg.Instructions) != ""}} {
		if f.set {
			return nil, [32]byte{}, configError(f.name, "", "set with PolicyFile (--policy-file): put allow, block and instructions in the policy file, its one source")
		}
	}
	s, sum, err := policyfile.Read(cfg.PolicyFile)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	if h := s.Header(); h != "" && strings.EqualFold(h, sessionHeader(cfg)) {
		return nil, [32]byte{}, configError("PolicyFile", h, "groupHeader must differ from the session header")
	}
	return s, sum, nil
}

// anyEntry reports whether list holds anything but blanks (an empty
// ALLOWED_ORIGINS="" sets nothing, so it does not compete with the file).
func anyEntry(list []string) bool {
	for _, v := range list {
		if strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

func sessionHeader(cfg Config) string {
	if cfg.SessionHeader == "" {
		return DefaultSessionHeader
	}
	return cfg.SessionHeader
}

// rules returns the policy in force; a guard not built by newGuard (the
// Supervisor's gate, unit tests) has an empty one, which refuses everything.
func (g *Guard) rules() *policyfile.Set {
	if s := g.pol.cur.Load(); s != nil {
		return s
	}
	return policyfile.Static(nil, "")
}

// groupFor returns the policy group of the user whose key is key.
func (g *Guard) groupFor(key string) *policyfile.Group {
	return g.rules().Group(groupOfKey(key))
}

// policyOf returns the policy that judges the agents of key.
func (g *Guard) policyOf(key string) *policy.Policy { return g.groupFor(key).Policy }

// rulesForFrame is the Fetch judge's view: the policy and instructions of
// the user whose tab holds frameID. Without groups it is one atomic load;
// with them, the frame's owner is looked up (a frame nobody owns, such as
// a tab in Chrome's default context, gets the default group).
func (g *Guard) rulesForFrame(frameID string) (*policy.Policy, string) {
	s := g.rules()
	grp := s.Default()
	if s.HasGroups() && frameID != "" {
		if key, ok := g.scopes.Owner(frameID); ok {
			grp = s.Group(groupOfKey(key))
		}
	}
	return grp.Policy, grp.Instructions
}

// ErrGroupRefused is wrapped by the refusal of a request whose group the
// policy file does not define (unknownGroup: refuse), or whose group
// differs from the one its user's context was made for.
var ErrGroupRefused = errors.New("policy group refused")

// keyOf returns the user key of an HTTP request: its session header's
// value and, when the policy has groups, the group its group header
// selects. A user's group is fixed while their context lives: a request
// naming another group for a session that already has a context is
// refused, not obeyed.
func (g *Guard) keyOf(h http.Header) (string, error) {
	session := h.Get(g.cfg.SessionHeader)
	if strings.Contains(session, groupSep) {
		return "", fmt.Errorf("%w: the %s header holds a NUL byte", ErrGroupRefused, g.cfg.SessionHeader)
	}
	s := g.rules()
	if !s.HasGroups() {
		return session, nil
	}
	value := h.Get(s.Header())
	group, err := s.Select(value)
	if err != nil {
		return "", fmt.Errorf("%w: %s %q names no group of the policy file (unknownGroup: refuse); the groups are %s", ErrGroupRefused, s.Header(), value, strings.Join(s.GroupNames(), ", "))
	}
	key := groupKey(session, group)
	if err := g.otherGroupLive(s, key); err != nil {
		return "", err
	}
	return key, nil
}

// otherGroupLive refuses key when its session already has a context in
// another group of s.
func (g *Guard) otherGroupLive(s *policyfile.Set, key string) error {
	if g.users == nil || !s.HasGroups() {
		return nil
	}
	session, group, _ := strings.Cut(key, groupSep)
	for _, other := range append([]string{""}, s.GroupNames()...) {
		if other != group && g.users.Lookup(groupKey(session, other)) != nil {
			return fmt.Errorf("%w: this user's browser context belongs to group %q; a user's group is fixed for the life of the context (close it, or wait for it to idle out, to change group)", ErrGroupRefused, displayGroup(other))
		}
	}
	return nil
}

// acquireUser is users.Acquire that checks the group again once the user
// is registered: two first requests of one session naming two groups at
// once both pass keyOf's check, and then at least one of them sees the
// other here and is refused, so a session never holds contexts in two
// groups.
func (g *Guard) acquireUser(ctx context.Context, key string) (*users.User, error) {
	existed := g.users.Lookup(key) != nil
	u, err := g.users.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := g.otherGroupLive(g.rules(), key); err != nil {
		g.users.Release(u)
		if !existed {
			// The context this call just made: dispose it unless another
			// connection holds it (ErrInUse), so two refused racers do not
			// lock the session out until it idles.
			_ = g.users.DisposeNow(ctx, key)
		}
		return nil, err
	}
	return u, nil
}

func displayGroup(g string) string {
	if g == "" {
		return "(default)"
	}
	return g
}

// policyOfTarget returns the policy of the user whose context holds
// targetID, the default group's for a target nobody owns.
func (g *Guard) policyOfTarget(targetID string) *policy.Policy {
	key, _ := g.scopes.Owner(targetID)
	return g.policyOf(key)
}

// allowAddrsOf lets the egress proxy dial the IP entries of key's group
// in the policy in force (loopback or private addresses the operator named
// for that group), and no other group's.
func (g *Guard) allowAddrsOf(key string) func(netip.Addr) bool {
	return func(a netip.Addr) bool {
		return slices.Contains(g.policyOf(key).IPEntries(), a.Unmap())
	}
}
