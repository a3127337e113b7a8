package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/users"
)

// defaultContextKey is the user key grantHost reports for targets in
// Chrome's default browser context: nobody's user, but in attach mode the
// human's own tabs, whose grants apply to the shared egress listener.
const defaultContextKey = "(default context)"

// grantScope is one session's grants and, for a user, the loopback proxy
// listener that user's browser contexts are pointed at, so the egress
// proxy judges their connections with these grants and nobody else's.
type grantScope struct {
	key      string // the user's key, or defaultContextKey
	set      grants.Set
	ln       net.Listener // nil for the default scope (the shared listener)
	proxyURL string
}

// close ends the session's grants and its listener (ServeScoped then
// closes the listener's connections).
func (sc *grantScope) close() {
	sc.set.Close()
	if sc.ln != nil {
		_ = sc.ln.Close()
	}
}

// grantState maps sessions to their grant scopes. It lives as long as the
// Guard (a relaunched browser gets a new Guard, so grants end with it) and
// is never written to disk.
type grantState struct {
	def grantScope // Chrome's default context

	frames *frameOwners // subframes → their page (grants_frames.go)

	mu             sync.Mutex
	byPrimary      map[string]*grantScope // user's primary context id → scope
	defaultContext string                 // Chrome's default context id, once learned
}

func newGrantState() *grantState {
	return &grantState{def: grantScope{key: defaultContextKey}, byPrimary: map[string]*grantScope{}, frames: newFrameOwners()}
}

// newGrantsCounter registers the grants counter on reg.
func newGrantsCounter(reg *prometheus.Registry) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "cdpguard_grants_total",
		Help: "Hosts granted for a session (\"Allow <host> for this session\").",
	})
	reg.MustRegister(c)
	return c
}

// grantHost adds host to the session grants of the user who owns
// targetID's browser context (targets in Chrome's default context go to
// the default-context scope) and returns that user's key. The host is
// normalised as the policy normalises hosts; IP literals, ports, wildcards
// and malformed names are refused, and so is a host a --block entry
// refuses (block entries always win over grants). Only guard code calls
// it (the controls' verified binding): no agent command reaches it.
func (g *Guard) grantHost(targetID, host, via string) (string, error) {
	h, err := g.grantable(targetID, host)
	if err != nil {
		return "", err
	}
	sc := g.scopeOfTarget(targetID)
	if sc == nil {
		return "", fmt.Errorf("grant: target %q is in no user's browser context", targetID)
	}
	if len(via) > 64 {
		via = via[:64]
	}
	added, err := sc.set.Add(h, via, time.Now())
	if err != nil {
		return "", fmt.Errorf("grant for user %q: %w", sc.key, err)
	}
	if added {
		g.metrics.grantsMade.Inc()
		g.log.Info("grant", "user", sc.key, "host", h, "via", via)
	}
	return sc.key, nil
}

// grantable returns host normalised if a session grant can cover it, or why
// not (an IP address, a single label, a host a --block entry names). The
// controls ask before they offer a human the allow button.
func (g *Guard) grantable(targetID, host string) (string, error) {
	h, err := grants.Normalize(host)
	if err != nil {
		return "", fmt.Errorf("grant: %w", err)
	}
	if d := g.policyOfTarget(targetID).DecideHost(h, 443); !d.Allowed && d.Rule != "" {
		return "", fmt.Errorf("grant: host %q is refused by the blocklist entry %q; a grant cannot override it", h, d.Rule)
	}
	return h, nil
}

// grantedHosts returns the hosts granted to the session of targetID's
// user, oldest first; nil when there are none or the target is nobody's.
func (g *Guard) grantedHosts(targetID string) []string {
	sc := g.scopeOfTarget(targetID)
	if sc == nil {
		return nil
	}
	return sc.set.Hosts()
}

// scopeOfTarget returns the grant scope of the user whose context holds
// targetID (also a frame id: a page's main frame and an out-of-process
// frame share their target's id), the default scope for a target in
// Chrome's default context, and nil otherwise.
func (g *Guard) scopeOfTarget(targetID string) *grantScope {
	if targetID == "" || g.users == nil {
		return nil
	}
	gs := g.grantScopes
	if _, primary, ok := g.users.PrimaryOf(targetID); ok {
		gs.mu.Lock()
		defer gs.mu.Unlock()
		return gs.byPrimary[primary]
	}
	c, ok := g.users.ContextOf(targetID)
	if !ok {
		return nil
	}
	gs.mu.Lock()
	defer gs.mu.Unlock()
	if gs.defaultContext != "" && c == gs.defaultContext {
		return &gs.def
	}
	return nil
}

// grantsForFrame is the Fetch judge's view of scopeOfTarget: a page's main
// frame and an out-of-process frame are targets themselves; another frame
// is looked up by the page that holds it.
func (g *Guard) grantsForFrame(frameID string) *grants.Set {
	sc := g.scopeOfTarget(frameID)
	if sc == nil {
		if page := g.grantScopes.frames.pageOf(frameID); page != "" {
			sc = g.scopeOfTarget(page)
		}
	}
	return sc.grantSet()
}

// scopeOfUser returns u's grant scope, nil when u has none (yet).
func (g *Guard) scopeOfUser(u *users.User) *grantScope {
	if u == nil || u.Primary == "" {
		return nil
	}
	g.grantScopes.mu.Lock()
	defer g.grantScopes.mu.Unlock()
	return g.grantScopes.byPrimary[u.Primary]
}

// learnDefaultContext records Chrome's default browser context id
// (Target.getBrowserContexts' defaultBrowserContextId, Chromium 156 has
// it; cdproto target.GetBrowserContextsReturns). Without it no target
// counts as the default context's and default-scope grants apply only to
// the shared proxy listener.
func (g *Guard) learnDefaultContext(ctx context.Context) {
	res, err := g.mux.Call(ctx, "", "Target.getBrowserContexts", nil)
	var r struct {
		DefaultBrowserContextID string `json:"defaultBrowserContextId"`
	}
	if err != nil || jsonv2.Unmarshal(res, &r) != nil || r.DefaultBrowserContextID == "" {
		g.log.Warn("the browser did not name its default context; grants in it apply to the egress proxy only", "err", err)
		return
	}
	g.grantScopes.mu.Lock()
	g.grantScopes.defaultContext = r.DefaultBrowserContextID
	g.grantScopes.mu.Unlock()
}

// newUserScope opens the loopback proxy listener of a user's new session
// and serves it with the policy plus that session's grants. On a guard
// without an egress proxy (unit tests) the scope has grants only.
func (g *Guard) newUserScope(key string) (*grantScope, error) {
	sc := &grantScope{key: key}
	if g.proxy == nil {
		return sc, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy listener for user %q: %w", key, err)
	}
	sc.ln = ln
	sc.proxyURL = "http://" + ln.Addr().String()
	g.agents.mu.Lock() // Close's barrier: no goroutine starts once Close waits for them
	if g.ctx.Err() != nil {
		g.agents.mu.Unlock()
		_ = ln.Close()
		return nil, fmt.Errorf("egress proxy listener for user %q: the guard is closing", key)
	}
	g.wg.Add(1)
	g.agents.mu.Unlock()
	go func() { // this user's listener: ends when the user's session does, or at Close
		defer g.wg.Done()
		if err := g.proxy.ServeScoped(ln, egress.Scope{Decide: g.decideHostWith(sc), Tag: sc, AllowAddrs: g.allowAddrsOf(sc.key)}); err != nil && !errors.Is(err, egress.ErrClosed) {
			g.log.Error("a user's egress proxy listener stopped", "user", key, "err", err)
		}
	}()
	return sc, nil
}

// decideHostWith is the egress proxy's judge for one scope: the policy in
// force for the scope's user (their group's, read per connection), then
// the scope's grants.
func (g *Guard) decideHostWith(sc *grantScope) egress.DecideFunc {
	return func(host string, port int) (bool, string) {
		d := sc.set.Decide(g.policyOf(sc.key).DecideHost(host, port))
		return d.Allowed, d.Reason
	}
}

// bindScope records sc as the scope of the user whose primary context is id.
func (g *Guard) bindScope(id string, sc *grantScope) {
	g.grantScopes.mu.Lock()
	defer g.grantScopes.mu.Unlock()
	g.grantScopes.byPrimary[id] = sc
}

// endScope ends the grants and the proxy listener of the session whose
// primary context is id, if it is one; called as the user's contexts are
// disposed (idle, or browser_close).
func (g *Guard) endScope(id string) {
	g.grantScopes.mu.Lock()
	sc := g.grantScopes.byPrimary[id]
	delete(g.grantScopes.byPrimary, id)
	g.grantScopes.mu.Unlock()
	if sc != nil {
		n := len(sc.set.List())
		sc.close()
		g.log.Info("user's session grants ended", "user", sc.key, "grants", n)
	}
}

// grantsJSON is how /policy and Guard.getPolicy show a session's grants.
func grantsJSON(sc *grantScope) []grants.Grant {
	if sc == nil {
		return []grants.Grant{}
	}
	l := sc.set.List()
	if l == nil {
		l = []grants.Grant{}
	}
	return l
}

// policyViewFor is policyView for the user key plus the grants of the
// session sc.
func (g *Guard) policyViewFor(key string, sc *grantScope) any {
	v := g.policyView(key)
	m, ok := v.(map[string]jsonv2.Value)
	if !ok {
		return v
	}
	b, err := jsonv2.Marshal(grantsJSON(sc))
	if err == nil {
		m["grants"] = b
	}
	return m
}

// grantSet returns the scope's grants; nil for a nil scope.
func (sc *grantScope) grantSet() *grants.Set {
	if sc == nil {
		return nil
	}
	return &sc.set
}

// decideFor judges a URL an agent of user u names (Page.navigate's
// neighbours in the firewall, Guard.read, the MCP tools) by the policy and
// then u's session grants; a nil u has none.
func (g *Guard) decideFor(u *users.User, url string) policy.Decision {
	key := ""
	if u != nil {
		key = u.Key
	}
	return g.decideForKey(key, u, url)
}

// decideForKey judges url for the user of key, whose registered user u is
// nil before the user has a browser context: the policy of key's group
// applies either way (a nil u would otherwise fall back to the default
// group's), the grants only once u exists.
func (g *Guard) decideForKey(key string, u *users.User, url string) policy.Decision {
	d := g.policyOf(key).Decide(url)
	if !d.Allowed && u != nil {
		d = g.scopeOfUser(u).grantSet().Decide(d)
	}
	return g.refuseSelf(d, url)
}

// refusalUser is the user whose own proxy listener refused r, "" for the
// shared listener.
func refusalUser(r egress.Refusal) string {
	if sc, ok := r.Tag.(*grantScope); ok {
		return sc.key
	}
	return ""
}
