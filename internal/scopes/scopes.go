// Package scopes keeps each user session's grants (internal/grants) and
// the loopback egress proxy listener that user's browser contexts are
// pointed at, so the proxy judges their connections with these grants and
// nobody else's, and finds the scope of a target or frame for the guard's
// judges. It makes and disposes the users' browser contexts
// (users.Contexts), so no context exists without its session's listener. Grants live as long as the guard (a relaunched browser gets a new
// guard, so they end with it) and are never written to disk.
//
// It is apart from internal/grants, which stays a pure overlay on the
// policy that the Fetch judge and the proxy consult per request: this
// package owns listeners, goroutines and the user look-ups of targets and
// frames. It observes no event: the page that holds a subframe is the page
// registry's (internal/pages, Deps.Pages).
package scopes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/users"
)

// DefaultKey is the user key of the scope of Chrome's default browser
// context: nobody's user, but in attach mode the human's own tabs, whose
// grants apply to the shared egress listener.
const DefaultKey = "(default context)"

// Users finds the user of a target (internal/users.Registry).
type Users interface {
	// PrimaryOf returns the key and primary context id of the user whose
	// context holds targetID.
	PrimaryOf(targetID string) (key, primary string, ok bool)
}

// Pages places targets and frames (internal/pages.Registry): a paused
// request names only its frame, and a same-process iframe or the first
// navigation of an out-of-process one (whose target does not exist yet)
// is its page's.
type Pages interface {
	// PageOf returns the page target that holds frameID, "" when unknown.
	PageOf(frameID string) string
	// ContextOf returns the browser context of targetID.
	ContextOf(targetID string) (contextID string, ok bool)
}

// Caller sends a command to the browser and waits for its result.
type Caller interface {
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
}

// Proxy serves a user's own egress proxy listener (internal/egress.Proxy).
type Proxy interface {
	ServeScoped(ln net.Listener, s egress.Scope) error
}

// Life is the guard's life as the scopes' listeners run in it.
type Life interface {
	// GoOwned runs f on a goroutine the guard owns and waits for at its
	// close; it reports false, and does not run f, once the guard is
	// closing.
	GoOwned(f func()) bool
}

// Policy is the policy in force for the user of key (their group's),
// read per decision, so reloads apply (internal/policystate.State).
type Policy interface {
	PolicyOf(key string) *policy.Policy
	// AllowAddrs lets a user's listener dial the IP entries of the user's
	// group (egress.Scope.AllowAddrs).
	AllowAddrs(key string) func(netip.Addr) bool
}

// Counter counts one thing (a prometheus.Counter).
type Counter interface{ Inc() }

// Files gives a user's new context its download directory.
type Files interface {
	// Defaults returns the Browser.setDownloadBehavior params of a
	// user's new context.
	Defaults(key, contextID string) (map[string]any, error)
}

// Deps is what a Table needs of the rest of the guard.
type Deps struct {
	Users   Users
	Pages   Pages
	Browser Caller // asked once for Chrome's default context (LearnDefaultContext)
	// Proxy returns the egress proxy, nil when there is none (unit tests):
	// scopes then have grants only, and no listener.
	Proxy func() Proxy
	// Life runs the users' listeners on goroutines the guard waits for.
	Life Life
	// Policy is the policy in force (internal/policystate).
	Policy Policy
	// Granted counts a host granted; may be nil.
	Granted Counter
	// Files gives a user's new context its download directory
	// (internal/files.Dirs; contexts.go).
	Files Files
	Log   *slog.Logger
}

// Scope is one session's grants and, for a user, its proxy listener. A nil
// *Scope is no session: it has no key, no grants and no listener.
type Scope struct {
	key      string // the user's key, or DefaultKey
	set      grants.Set
	ln       net.Listener // nil for the default scope (the shared listener)
	proxyURL string
}

// Key returns the scope's user key ("" for nil).
func (sc *Scope) Key() string {
	if sc == nil {
		return ""
	}
	return sc.key
}

// Grants returns the scope's grants; nil for a nil scope (a nil
// *grants.Set grants nothing).
func (sc *Scope) Grants() *grants.Set {
	if sc == nil {
		return nil
	}
	return &sc.set
}

// ProxyURL returns the URL of the scope's own proxy listener, "" when it
// has none.
func (sc *Scope) ProxyURL() string {
	if sc == nil {
		return ""
	}
	return sc.proxyURL
}

// List returns the scope's grants, oldest first, as /policy shows them:
// never nil (an empty list for none or for a nil scope).
func (sc *Scope) List() []grants.Grant {
	var l []grants.Grant
	if sc != nil {
		l = sc.set.List()
	}
	if l == nil {
		l = []grants.Grant{}
	}
	return l
}

// Close ends the session's grants and its listener (the proxy then closes
// the listener's connections).
func (sc *Scope) Close() {
	sc.set.Close()
	if sc.ln != nil {
		_ = sc.ln.Close()
	}
}

// FromTag returns the scope an egress refusal's Tag names (a user's own
// listener), nil for the shared listener.
func FromTag(tag any) *Scope {
	sc, _ := tag.(*Scope)
	return sc
}

// Table maps users' sessions to their scopes. Its methods are safe for
// concurrent use; the look-ups (Owner, OfTarget, OfUser) are safe on a nil
// *Table too, which has no scopes (a guard that serves no browser, such as
// a Supervisor's gate).
type Table struct {
	d   Deps
	def Scope // Chrome's default context

	mu             sync.Mutex
	byPrimary      map[string]*Scope // user's primary context id → scope
	defaultContext string            // Chrome's default context id, once learned
}

// New returns a table with the default context's scope only.
func New(d Deps) *Table {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Table{d: d, def: Scope{key: DefaultKey}, byPrimary: map[string]*Scope{}}
}

// Default returns the scope of Chrome's default context, whose grants
// apply to the shared proxy listener.
func (t *Table) Default() *Scope { return &t.def }

// Grant adds host to the session grants of the user who owns targetID's
// browser context (targets in Chrome's default context go to the default
// scope) and returns that user's key. The host is normalised as the policy
// normalises hosts; IP literals, ports, wildcards and malformed names are
// refused, and so is a host a --block entry refuses (block entries always
// win over grants). Only guard code calls it (the controls' verified
// binding): no agent command reaches it.
func (t *Table) Grant(targetID, host, via string) (string, error) {
	h, err := t.Grantable(targetID, host)
	if err != nil {
		return "", err
	}
	sc := t.OfTarget(targetID)
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
		if t.d.Granted != nil {
			t.d.Granted.Inc()
		}
		t.d.Log.Info("grant", "user", clip.String(sc.key), "host", h, "via", via)
	}
	return sc.key, nil
}

// Grantable returns host normalised if a session grant can cover it, or
// why not (an IP address, a single label, a host a --block entry of the
// target's user's policy names). The controls ask before they offer a
// human the allow button.
func (t *Table) Grantable(targetID, host string) (string, error) {
	h, err := grants.Normalize(host)
	if err != nil {
		return "", fmt.Errorf("grant: %w", err)
	}
	key, _ := t.Owner(targetID)
	if d := t.d.Policy.PolicyOf(key).DecideHost(h, 443); !d.Allowed && d.Rule != "" {
		return "", fmt.Errorf("grant: host %q is refused by the blocklist entry %q; a grant cannot override it", h, d.Rule)
	}
	return h, nil
}

// Hosts returns the hosts granted to the session of targetID's user,
// oldest first; nil when there are none or the target is nobody's.
func (t *Table) Hosts(targetID string) []string {
	sc := t.OfTarget(targetID)
	if sc == nil {
		return nil
	}
	return sc.set.Hosts()
}

// Owner returns the key of the user whose context holds frameID (a
// target, or a frame of a page the guard saw attach).
func (t *Table) Owner(frameID string) (string, bool) {
	if t == nil || t.d.Users == nil {
		return "", false
	}
	if key, _, ok := t.d.Users.PrimaryOf(frameID); ok {
		return key, true
	}
	if page := t.pageOf(frameID); page != "" {
		if key, _, ok := t.d.Users.PrimaryOf(page); ok {
			return key, true
		}
	}
	return "", false
}

// pageOf returns the page that holds subframe frameID, "" when unknown or
// when the table has no page registry.
func (t *Table) pageOf(frameID string) string {
	if t == nil || t.d.Pages == nil {
		return ""
	}
	return t.d.Pages.PageOf(frameID)
}

// OfTarget returns the scope of the user whose context holds targetID
// (also a frame id: a page's main frame and an out-of-process frame share
// their target's id), the default scope for a target in Chrome's default
// context, and nil otherwise.
func (t *Table) OfTarget(targetID string) *Scope {
	if t == nil || targetID == "" || t.d.Users == nil {
		return nil
	}
	if _, primary, ok := t.d.Users.PrimaryOf(targetID); ok {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.byPrimary[primary]
	}
	if t.d.Pages == nil {
		return nil
	}
	c, ok := t.d.Pages.ContextOf(targetID)
	if !ok {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.defaultContext != "" && c == t.defaultContext {
		return &t.def
	}
	return nil
}

// ForFrame is the Fetch judge's view of OfTarget: a page's main frame and
// an out-of-process frame are targets themselves; another frame is looked
// up by the page that holds it.
func (t *Table) ForFrame(frameID string) *grants.Set {
	sc := t.OfTarget(frameID)
	if sc == nil {
		if page := t.pageOf(frameID); page != "" {
			sc = t.OfTarget(page)
		}
	}
	return sc.Grants()
}

// OfUser returns u's scope, nil when u has none (yet).
func (t *Table) OfUser(u *users.User) *Scope {
	if t == nil || u == nil || u.Primary == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byPrimary[u.Primary]
}

// LearnDefaultContext records Chrome's default browser context id
// (Target.getBrowserContexts' defaultBrowserContextId, Chromium 156 has
// it; cdproto target.GetBrowserContextsReturns). Without it no target
// counts as the default context's and default-scope grants apply only to
// the shared proxy listener.
func (t *Table) LearnDefaultContext(ctx context.Context) {
	res, err := t.d.Browser.Call(ctx, "", "Target.getBrowserContexts", nil)
	var r struct {
		DefaultBrowserContextID string `json:"defaultBrowserContextId"`
	}
	if err != nil || jsonv2.Unmarshal(res, &r) != nil || r.DefaultBrowserContextID == "" {
		t.d.Log.Warn("the browser did not name its default context; grants in it apply to the egress proxy only", "err", err)
		return
	}
	t.mu.Lock()
	t.defaultContext = r.DefaultBrowserContextID
	t.mu.Unlock()
}

// Open opens the loopback proxy listener of a user's new session and
// serves it with the user's policy plus that session's grants. Without an
// egress proxy the scope has grants only. Bind it once the user's context
// exists; Close it if it never does.
func (t *Table) Open(key string) (*Scope, error) {
	sc := &Scope{key: key}
	p := t.proxy()
	if p == nil {
		return sc, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress proxy listener for user %q: %w", key, err)
	}
	sc.ln = ln
	sc.proxyURL = "http://" + ln.Addr().String()
	s := egress.Scope{Decide: t.Decider(sc), Tag: sc}
	if t.d.Policy != nil {
		s.AllowAddrs = t.d.Policy.AllowAddrs(key)
	}
	started := t.d.Life.GoOwned(func() { // this user's listener: ends when the user's session does, or at the guard's close
		if err := p.ServeScoped(ln, s); err != nil && !errors.Is(err, egress.ErrClosed) {
			t.d.Log.Error("a user's egress proxy listener stopped", "user", clip.String(key), "err", err)
		}
	})
	if !started {
		_ = ln.Close()
		return nil, fmt.Errorf("egress proxy listener for user %q: the guard is closing", key)
	}
	return sc, nil
}

// Decider is the egress proxy's judge for one scope: the policy in force
// for the scope's user (their group's, read per connection), then the
// scope's grants.
func (t *Table) Decider(sc *Scope) egress.DecideFunc {
	return func(host string, port int) (bool, string) {
		d := sc.Grants().Decide(t.d.Policy.PolicyOf(sc.Key()).DecideHost(host, port))
		return d.Allowed, d.Reason
	}
}

// Bind records sc as the scope of the user whose primary context is id.
func (t *Table) Bind(id string, sc *Scope) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byPrimary[id] = sc
}

// End ends the grants and the proxy listener of the session whose primary
// context is id, if it is one; called as the user's contexts are disposed
// (idle, or browser_close).
func (t *Table) End(id string) {
	t.mu.Lock()
	sc := t.byPrimary[id]
	delete(t.byPrimary, id)
	t.mu.Unlock()
	if sc != nil {
		n := len(sc.set.List())
		sc.Close()
		t.d.Log.Info("user's session grants ended", "user", clip.String(sc.key), "grants", n)
	}
}
