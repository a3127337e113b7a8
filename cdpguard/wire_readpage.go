package cdpguard

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/readpage"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/rules"
	"github.com/cdpguard/cdpguard/internal/scopes"
	"github.com/cdpguard/cdpguard/internal/users"
)

// ErrReadRefused is wrapped by Read errors that refuse the URL by policy
// (GET /read answers them with 403).
var ErrReadRefused = readpage.ErrRefused

// ReadResult is one section of a page's readable text: the title, the URL
// and any notes on top, then the main content (URL, Title, Text, Offset,
// TotalChars). Sections stitch back to the whole text: read again at
// NextOffset until it is absent.
type ReadResult = readpage.Result

// newReader wires the reader's page driver (internal/readpage) to the
// guard: its browser connection, policy, users and hidden worlds. start
// calls it once the browser connection exists.
func (g *Guard) newReader() *readpage.Reader {
	return readpage.New(readpage.Deps{
		Browser:       g.mux,
		Policy:        readPolicy{g},
		Users:         readUsers{g},
		Pages:         g.pages,
		World:         g.worlds.NewName("reader"),
		WorldMade:     func(frameID string, id int64) { g.worlds.MadeIn("", frameID, id) },
		AwaitSetup:    g.pages.AwaitSetup,
		SearchURL:     g.cfg.SearchURL,
		LoadTimeout:   g.cfg.ReadLoadTimeout,
		SettleTimeout: g.cfg.ReadSettleTimeout,
	})
}

// Read reads url in the user's reader tab (opened in the user's browser
// context on first use, reused after) and returns the section at offset of
// at most maxChars characters (0: 30,000). user is the session header's
// value ("" is the shared fallback user). A URL the policy blocks is
// refused with an error wrapping ErrReadRefused that names the host and the
// reachable origins; nothing is sent to that host.
func (g *Guard) Read(ctx context.Context, user, url string, offset, maxChars int) (ReadResult, error) {
	return g.rd.Read(ctx, user, url, offset, maxChars)
}

// guardRead answers Guard.read on an agent's page session, for pages of
// the agent's user.
func (g *Guard) guardRead(ctx context.Context, st *agentState, cmd relay.Command) relay.Verdict {
	return g.rd.Command(ctx, cmd, func(targetID string) bool { return g.users.OwnsTarget(st.User, targetID) })
}

// serveRead answers GET /read?url=...&offset=...&maxChars=... with a
// ReadResult as JSON, read in the user's reader tab.
func (g *Guard) serveRead(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "cdpguard: use GET for /read", http.StatusMethodNotAllowed)
		return
	}
	if !g.ready.Load() {
		http.Error(w, "cdpguard: not ready", http.StatusServiceUnavailable)
		return
	}
	p, err := readpage.ParseQuery(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key, ok := g.userKey(w, r)
	if !ok {
		return
	}
	g.rd.Serve(r.Context(), w, key, p)
}

// CheckRead returns the error Read would refuse url with under cfg's
// policy (wrapping ErrReadRefused, or the policy's or policy file's
// error), without a browser: `cdpguard read` refuses before it starts one.
func CheckRead(cfg Config, url string) error {
	rules, _, err := loadPolicy(cfg) // the policy file's default group, when there is one
	if err != nil {
		return err
	}
	p := rules.Default().Policy
	if msg := readRefusal(p, nil, url); msg != "" {
		return fmt.Errorf("%w: %s", ErrReadRefused, msg)
	}
	return nil
}

// readRefusal returns why url may not be read by the user of key (their
// group's policy) in the session sc (nil: no grants), naming the host and
// the reachable origins, or "".
func (g *Guard) readRefusal(key string, sc *scopes.Scope, url string) string {
	p := g.policyOf(key)
	if msg := readRefusal(p, sc.Grants(), url); msg != "" {
		return msg
	}
	if d := g.refuseSelf(p.Decide(url), url); !d.Allowed && d.Reason == fetchdomain.ReasonSelf {
		return fmt.Sprintf("%s (%s); nothing was sent to it", d.Reason, clip.String(url))
	}
	return ""
}

func readRefusal(p *policy.Policy, granted *grants.Set, url string) string {
	if msg := rules.URLRefusal("read", url); msg != "" {
		return strings.TrimPrefix(msg, "cdpguard: ")
	}
	if d := granted.Decide(p.Decide(url)); !d.Allowed {
		origins := "none (the allowlist is empty)"
		if o := p.Origins(); len(o) > 0 {
			origins = strings.Join(o, ", ")
		}
		return fmt.Sprintf("%s (%s); nothing was sent to it. Reachable origins: %s", d.Reason, clip.String(url), origins)
	}
	return ""
}

// readPolicy is readpage.Policy: the user's group policy and session
// grants.
type readPolicy struct{ g *Guard }

func (p readPolicy) UserRefusal(key, url string) string {
	return p.g.readRefusal(key, p.g.scopes.OfUser(p.g.users.Lookup(key)), url)
}

func (p readPolicy) PageRefusal(targetID, url string) string {
	sc := p.g.scopes.OfTarget(targetID)
	return p.g.readRefusal(sc.Key(), sc, url)
}

// readUsers is readpage.Users: the users registry and the tab cap.
type readUsers struct{ g *Guard }

func (r readUsers) Hold(ctx context.Context, key string) (readpage.User, func(), error) {
	u, err := r.g.acquireUser(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	return readUser{r.g, u}, func() { r.g.users.Release(u) }, nil
}

type readUser struct {
	g *Guard
	u *users.User
}

func (r readUser) Owns(targetID string) bool { return r.g.users.OwnsTarget(r.u, targetID) }
func (r readUser) CheckTabs() error          { return r.g.iso.CheckTabs(r.u) }
func (r readUser) Context() string           { return r.u.Primary }
