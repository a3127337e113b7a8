package cdpguard

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/readpage"
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
// guard: its browser connection (muxCaller),
// policy, users, hidden worlds and endpoint (GET /read).
func (g *Guard) newReader() *readpage.Reader {
	return readpage.New(readpage.Deps{
		Browser:       muxCaller{g},
		Policy:        readPolicy{g},
		Users:         readUsers{g},
		Pages:         g.pages,
		World:         g.worlds.NewName("reader"),
		Worlds:        g.worlds,
		SearchURL:     g.cfg.SearchURL,
		LoadTimeout:   g.cfg.ReadLoadTimeout,
		SettleTimeout: g.cfg.ReadSettleTimeout,
		Ready:         g.ready.Load,
		UserKey:       g.ep.json.UserKey,
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

// CheckRead returns the error Read would refuse url with under cfg's
// policy (wrapping ErrReadRefused, or the policy's or policy file's
// error), without a browser: `cdpguard read` refuses before it starts one.
func CheckRead(cfg Config, url string) error {
	rules, _, err := loadPolicy(cfg) // the policy file's default group, when there is one
	if err != nil {
		return err
	}
	if msg := readpage.Refusal(rules.Default().Policy, nil, url, nil); msg != "" {
		return fmt.Errorf("%w: %s", ErrReadRefused, msg)
	}
	return nil
}

// readPolicy is readpage.Policy: the user's group policy and session
// grants, and the guard's own addresses.
type readPolicy struct{ g *Guard }

func (p readPolicy) OfUser(key string) (*policy.Policy, *grants.Set) {
	return p.g.policyOf(key), p.g.scopes.OfUser(p.g.users.Lookup(key)).Grants()
}

func (p readPolicy) OfPage(targetID string) (*policy.Policy, *grants.Set) {
	sc := p.g.scopes.OfTarget(targetID)
	return p.g.policyOf(sc.Key()), sc.Grants()
}

func (p readPolicy) Self(d policy.Decision, url string) policy.Decision {
	return p.g.refuseSelf(d, url)
}

// readUsers is readpage.Users: the users registry and the tab cap.
type readUsers struct{ g *Guard }

// Hold holds key's user for a read; a cap on users refusing a new one is
// a refusal of the read (403 on /read), naming the cap.
func (r readUsers) Hold(ctx context.Context, key string) (readpage.User, func(), error) {
	u, err := r.g.acquireUser(ctx, key)
	if errors.Is(err, users.ErrCap) {
		return nil, nil, fmt.Errorf("%w: %w", readpage.ErrRefused, err)
	}
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
