package cdpguard

import (
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/policyfile"
)

// ReloadPolicy reads the policy file (Config.PolicyFile) again now, as
// SIGHUP does; the guard also polls the file by itself. A file that does
// not parse changes nothing: the error is returned, logged and counted
// (cdpguard_policy_reloads_total{result="error"}). Without a policy file it
// returns an error wrapping ErrPolicyFile.
func (g *Guard) ReloadPolicy() error {
	if g.cfg.PolicyFile == "" {
		return fmt.Errorf("%w: no policy file to reload (Config.PolicyFile is empty)", ErrPolicyFile)
	}
	return g.reloadFile("reload")
}

// reloadFile reads the policy file and puts it in force, both under
// pol.mu, so that two reloads racing (SIGHUP and the watcher) apply the
// file in the order they read it and the last one read is the one in
// force.
func (g *Guard) reloadFile(why string) error {
	g.pol.mu.Lock()
	defer g.pol.mu.Unlock()
	s, sum, err := policyfile.Read(g.cfg.PolicyFile)
	if err != nil {
		g.policyRefused(err)
		return fmt.Errorf("%w: %w", ErrPolicyFile, err)
	}
	g.applyPolicyLocked(s, sum, why)
	return nil
}

// SetPolicy replaces the allowlist, blocklist and instructions of a guard
// configured without a policy file, as a reload does: every new decision
// of every layer uses it at once, open tunnels to hosts it no longer
// allows are closed, MCP clients are told, and no connection, context or
// grant is dropped. A bad entry changes nothing and is returned as a
// *ConfigError. With a policy file it is refused (the file is the one
// source); edit the file instead.
func (g *Guard) SetPolicy(allow, block []string, instructions string) error {
	if g.cfg.PolicyFile != "" {
		return fmt.Errorf("%w: the policy comes from %s; edit the file instead", ErrPolicyFile, g.cfg.PolicyFile)
	}
	p, err := policy.Parse(allow, block)
	if err != nil {
		return setupError("", err)
	}
	g.applyPolicy(policyfile.Static(p, instructions), [32]byte{}, "SetPolicy")
	return nil
}

// watchPolicy polls the policy file until the guard closes.
func (g *Guard) watchPolicy() {
	g.pol.mu.Lock()
	sum := g.pol.sum
	g.pol.mu.Unlock()
	// The watcher only says that the file changed: the file is read again
	// under pol.mu (reloadFile), so a SIGHUP racing it cannot put an older
	// reading in force after a newer one.
	w := policyfile.NewWatcher(g.cfg.PolicyFile, sum, g.cfg.PolicyPoll, func(_ *policyfile.Set, err error) {
		if err != nil {
			g.policyRefused(err)
			return
		}
		_ = g.reloadFile("file changed") // a refusal is logged and counted there
	})
	w.Run(g.ctx)
}

// policyRefused logs and counts a policy file that could not be loaded.
func (g *Guard) policyRefused(err error) {
	g.metrics.policyReloads.WithLabelValues("error").Inc()
	g.log.Error("policy file refused; the policy in force is unchanged", "err", err)
}

// applyPolicy puts s in force and then does what follows from it: tunnels
// the new policy refuses are closed, MCP clients are told, and one log
// line says what changed. sum is the file's content hash ("" when not
// known: the watcher's own).
func (g *Guard) applyPolicy(s *policyfile.Set, sum [32]byte, why string) {
	g.pol.mu.Lock()
	defer g.pol.mu.Unlock()
	g.applyPolicyLocked(s, sum, why)
}

// applyPolicyLocked is applyPolicy with pol.mu held.
func (g *Guard) applyPolicyLocked(s *policyfile.Set, sum [32]byte, why string) {
	if sum != ([32]byte{}) {
		g.pol.sum = sum
	}
	old := g.pol.cur.Swap(s)
	diff := policyfile.Compare(old, s)
	g.metrics.policyReloads.WithLabelValues("ok").Inc()
	if diff.Empty() {
		g.log.Info("policy reloaded: no change", "why", why)
		return
	}
	closed := 0
	if g.proxy != nil {
		closed = g.proxy.Recheck()
	}
	g.policyChangedMCP()
	g.log.Info("policy reloaded: "+diff.String(), "why", why, "tunnelsClosed", closed,
		"allowed", slices.Clone(s.Default().Policy.Origins()))
}

// newPolicyReloadsCounter registers the policy reload counter on reg.
func newPolicyReloadsCounter(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "cdpguard_policy_reloads_total",
		Help: "Policy reloads (file change, SIGHUP, SetPolicy), by result: ok, or error (a bad file: the policy in force was kept).",
	}, []string{"result"})
	reg.MustRegister(c)
	return c
}

// policyChangedMCP tells the MCP server, if one was started, that the
// policy changed (tools/list_changed to every session).
func (g *Guard) policyChangedMCP() {
	g.agents.mu.Lock()
	srv := g.mcp.srv
	g.agents.mu.Unlock()
	if srv != nil {
		srv.PolicyChanged()
	}
}
