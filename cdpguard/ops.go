package cdpguard

import (
	"net/netip"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/blocklog"
	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/scopes"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Block log fields: every refused request is logged once, by the guard, as
// msg="blocked" with exactly these keys (as JSON keys with --log-format
// json), whichever layer refused it (internal/blocklog writes the line;
// TestBlockedLine keeps these names its own). Operators grep and alert on
// them; keep the names stable.
const (
	BlockedMsg        = "blocked"
	FieldURL          = "url"
	FieldHost         = "host"
	FieldReason       = "reason"
	FieldResourceType = "resource_type"
	FieldUser         = "user"
	FieldTarget       = "target"
	FieldLayer        = "layer"
)

// Layers named in the block log line's layer field.
const (
	LayerFetch       = "fetch"        // the browser-level Fetch judge
	LayerEgressProxy = "egress-proxy" // the egress proxy (WebSockets, preconnects, ...)
)

// logFetchBlock logs the canonical line for a request the Fetch judge
// refused (blocklog.Fetch).
func (g *Guard) logFetchBlock(b fetchdomain.Block, key string, owned bool) {
	blocklog.Fetch(g.log, b, key, owned)
}

// logProxyRefusal logs the canonical line for a connection the egress proxy
// refused; the user is known only on a user's own listener.
func (g *Guard) logProxyRefusal(r egress.Refusal) {
	blocklog.Proxy(g.log, r, scopes.FromTag(r.Tag).Key())
}

// useEndpoint records the address a Supervisor serves the endpoint on,
// instead of listening: the guard serves through the supervisor.
func (g *Guard) useEndpoint(addr string) error {
	g.ep.url = "http://" + addr
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		g.ep.self.Add(ap) // pages never reach the endpoint (the proxy and the Fetch judge share the set)
	}
	return nil
}

// agentWriteTimeout bounds one write to an agent's socket: an agent that
// does not read for this long while messages wait for it is cut off; so is
// one whose queue stays over its back-pressure mark this long (internal/bounds).
func (g *Guard) agentWriteTimeout() time.Duration {
	if g.cfg.AgentWriteTimeout > 0 {
		return g.cfg.AgentWriteTimeout
	}
	return defaultAgentWriteTimeout
}

const defaultAgentWriteTimeout = 10 * time.Second

// onAgentStall counts and logs an agent cut off for not reading.
func (g *Guard) onAgentStall() {
	g.metrics.Bounds.CutOff(bounds.CutWriteStall)
	g.log.Warn("agent cut off: it did not read its messages", "bound", g.agentWriteTimeout())
}

// serving reports whether g (possibly nil) is ready and its browser
// connection is still up: a lost browser is seen here before Close has
// turned ready off.
func (g *Guard) serving() bool {
	if g == nil || !g.ready.Load() {
		return false
	}
	select {
	case <-g.mux.Done():
		return false
	default:
		return true
	}
}

// judgeSide is the guard's side of the Fetch judge (fetchdomain.Rules,
// Self and Blocks): the policy of a frame's user, the guard's own
// addresses, and what follows a refused request.
type judgeSide struct{ g *Guard }

// RulesFor is rulesForFrame.
func (s judgeSide) RulesFor(frameID string) (*policy.Policy, string) {
	return s.g.rulesForFrame(frameID)
}

// IsSelf is isSelfHost.
func (s judgeSide) IsSelf(host string, port int) bool { return s.g.isSelfHost(host, port) }

// Blocked counts a refused request and tells agents that asked.
func (s judgeSide) Blocked(b fetchdomain.Block) {
	g := s.g
	g.metrics.FetchBlocked.WithLabelValues(b.ResourceType).Inc()
	key, ok := g.users.OwnerKey(b.FrameID)
	g.logFetchBlock(b, key, ok)
	g.ctl.Blocked(b.FrameID, b.URL, b.Reason, b.TopLevel)
	if ok {
		g.notifyBlock(key, b)
	}
}

// notifyBlock sends Guard.requestBlocked to the connections of user key
// that sent Guard.enable. Other users never learn this user's URLs; a block
// the guard cannot tie to a user's tab (a worker, an out-of-process frame,
// a proxy refusal) is only logged and counted.
func (g *Guard) notifyBlock(key string, b fetchdomain.Block) {
	params, err := jsonv2.Marshal(b)
	if err != nil {
		return
	}
	g.agents.Notify(func(u *users.User) bool { return u.Key == key }, "Guard.requestBlocked", params)
}
