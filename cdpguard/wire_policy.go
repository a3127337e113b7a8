package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/policyfile"
	"github.com/cdpguard/cdpguard/internal/policystate"
	"github.com/cdpguard/cdpguard/internal/scopes"
	"github.com/cdpguard/cdpguard/internal/users"
)

// This file wires the policy in force (internal/policystate) to the guard:
// where it starts from (Config), what follows a change (tunnels rechecked,
// MCP clients told, the counter), and the user keys of requests.

// ErrPolicyFile is wrapped by ReloadPolicy's errors about the file, and by
// SetPolicy when a policy file is the policy's one source.
var ErrPolicyFile = policystate.ErrPolicyFile

// ErrGroupRefused is wrapped by the refusal of a request whose group the
// policy file does not define (unknownGroup: refuse), or whose group
// differs from the one its user's context was made for.
var ErrGroupRefused = policystate.ErrGroupRefused

// ReloadPolicy reads the policy file (Config.PolicyFile) again now, as
// SIGHUP does; the guard also polls the file by itself. A file that does
// not parse changes nothing: the error is returned, logged and counted
// (cdpguard_policy_reloads_total{result="error"}). Without a policy file it
// returns an error wrapping ErrPolicyFile.
func (g *Guard) ReloadPolicy() error { return g.pol.Reload("reload") }

// SetPolicy replaces the allowlist, blocklist and instructions of a guard
// configured without a policy file, as a reload does: every new decision
// of every layer uses it at once, open tunnels to hosts it no longer
// allows are closed, MCP clients are told, and no connection, context or
// grant is dropped. A bad entry changes nothing and is returned as a
// *ConfigError. With a policy file it is refused (the file is the one
// source); edit the file instead.
func (g *Guard) SetPolicy(allow, block []string, instructions string) error {
	if err := g.pol.Settable(); err != nil {
		return err
	}
	p, err := policy.Parse(allow, block)
	if err != nil {
		return setupError("", err)
	}
	return g.pol.Set(policyfile.Static(p, instructions), "SetPolicy")
}

// newPolicyState puts rules in force; sum is the content hash of the file
// they were read from.
func (g *Guard) newPolicyState(rules *policyfile.Set, sum [32]byte) *policystate.State {
	return policystate.New(rules, sum, policystate.Deps{
		File: g.cfg.PolicyFile, Poll: g.cfg.PolicyPoll, Log: g.log,
		Reloads: g.metrics.PolicyReloads,
		Recheck: func() int {
			if g.proxy == nil {
				return 0
			}
			return g.proxy.Recheck()
		},
		OnChange: func() { g.mcp.PolicyChanged() },
	})
}

// loadPolicy builds the starting policy from cfg (policystate.Load): the
// policy file when one is given (then Allow, Block and Instructions must be
// empty: the file is the one source), else Allow, Block and Instructions.
func loadPolicy(cfg Config) (*policyfile.Set, [32]byte, error) {
	header := cfg.SessionHeader
	if header == "" {
		header = DefaultSessionHeader
	}
	s, sum, err := policystate.Load(policystate.Source{File: cfg.PolicyFile, Allow: cfg.Allow, Block: cfg.Block, Instructions: cfg.Instructions, SessionHeader: header})
	var fe *policystate.FieldError
	switch {
	case err == nil:
		return s, sum, nil
	case errors.As(err, &fe):
		return nil, sum, configError(fe.Field, fe.Entry, fe.Reason)
	case cfg.PolicyFile == "":
		return nil, sum, setupError("", err)
	default:
		return nil, sum, fmt.Errorf("%w: %w", ErrSetup, err)
	}
}

// policyViewFor is what /policy and Guard.getPolicy return to the user of
// key in the session sc (policystate.State.View).
func (g *Guard) policyViewFor(key string, sc *scopes.Scope) any {
	return g.pol.View(key, g.cfg.SearchURL, sc.List())
}

// rules returns the policy in force; a guard not built by newGuard (the
// Supervisor's gate, unit tests) has an empty one, which refuses everything.
func (g *Guard) rules() *policyfile.Set { return g.pol.Rules() }

// groupFor returns the policy group of the user whose key is key.
func (g *Guard) groupFor(key string) *policyfile.Group { return g.pol.Group(key) }

// policyOf returns the policy that judges the agents of key.
func (g *Guard) policyOf(key string) *policy.Policy { return g.pol.PolicyOf(key) }

// rulesForFrame is the Fetch judge's view: the policy and instructions of
// the user whose tab holds frameID.
func (g *Guard) rulesForFrame(frameID string) (*policy.Policy, string) {
	return g.pol.ForFrame(frameID, g.scopes.Owner)
}

// keyOf returns the user key of an HTTP request (policystate.KeyOf): a
// user's group is fixed while their context lives.
func (g *Guard) keyOf(h http.Header) (string, error) {
	return g.pol.KeyOf(h, g.cfg.SessionHeader, g.liveUser())
}

// liveUser reports whether a user key has a browser context; nil without
// a users registry (the Supervisor's gate).
func (g *Guard) liveUser() policystate.Live {
	if g.users == nil {
		return nil
	}
	return func(key string) bool { return g.users.Lookup(key) != nil }
}

// policyUsers is the users as the policy in force keys, holds and judges
// them (devtoolsjson.Guard, rules.Policy, admission's Acquire).
type policyUsers struct{ g *Guard }

// Decide is decideFor.
func (p policyUsers) Decide(u *users.User, url string) policy.Decision { return p.g.decideFor(u, url) }

// View is Guard.getPolicy's answer for u: their group and session grants.
func (p policyUsers) View(u *users.User) any {
	return p.g.policyViewFor(u.Key, p.g.scopes.OfUser(u))
}

// KeyOf is keyOf.
func (p policyUsers) KeyOf(h http.Header) (string, error) { return p.g.keyOf(h) }

// Acquire is acquireUser.
func (p policyUsers) Acquire(ctx context.Context, key string) (*users.User, error) {
	return p.g.acquireUser(ctx, key)
}

// acquireUser is users.Acquire that checks the group again once the user
// is registered: two first requests of one session naming two groups at
// once both pass keyOf's check, and then at least one of them sees the
// other here and is refused, so a session never holds contexts in two
// groups (users.Registry.AcquireChecked).
func (g *Guard) acquireUser(ctx context.Context, key string) (*users.User, error) {
	return g.users.AcquireChecked(ctx, key, func() error {
		return policystate.OtherGroupLive(g.rules(), key, g.liveUser())
	})
}

// policyOfTarget returns the policy of the user whose context holds
// targetID, the default group's for a target nobody owns.
func (g *Guard) policyOfTarget(targetID string) *policy.Policy {
	key, _ := g.scopes.Owner(targetID)
	return g.policyOf(key)
}
