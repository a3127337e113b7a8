package cdpguard

import (
	"context"

	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/scopes"
	"github.com/cdpguard/cdpguard/internal/users"
)

// newScopes wires users' grant scopes, proxy listeners and browser
// contexts (internal/scopes) to the users registry, the browser, the
// egress proxy (once started), the policy in force, the download
// directories and the guard's goroutines.
func (g *Guard) newScopes() *scopes.Table {
	return scopes.New(scopes.Deps{
		Users:   g.users,
		Pages:   g.pages,
		Browser: muxCaller{g},
		Proxy: func() scopes.Proxy { // started after newGuard: the browser's flags name its address
			if g.proxy == nil {
				return nil
			}
			return g.proxy
		},
		Life:    (*guardLife)(&g.lifecycle),
		Policy:  g.pol,
		Granted: g.metrics.GrantsMade,
		Files:   g.files,
		Log:     g.log,
	})
}

// userContexts is the users registry's Contexts: the scopes table makes
// and disposes them (with the session's listener), and is built after the
// registry, which it needs.
type userContexts struct{ g *Guard }

func (c userContexts) Create(ctx context.Context, key string) (string, error) {
	return c.g.scopes.Create(ctx, key)
}

func (c userContexts) Dispose(ctx context.Context, id string) error {
	return c.g.scopes.Dispose(ctx, id)
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
		d = g.scopes.OfUser(u).Grants().Decide(d)
	}
	return g.refuseSelf(d, url)
}
