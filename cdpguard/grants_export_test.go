package cdpguard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// GrantHost exposes grantHost to the external tests: in the product only
// the controls' verified binding calls it.
func GrantHost(g *Guard, targetID, host, via string) (string, error) {
	return g.scopes.Grant(targetID, host, via)
}

// GrantedHosts exposes grantedHosts.
func GrantedHosts(g *Guard, targetID string) []string { return g.scopes.Hosts(targetID) }

// UserProxyAddr returns the address of user key's egress proxy listener,
// "" when the user has none.
func UserProxyAddr(g *Guard, key string) string {
	return strings.TrimPrefix(g.scopes.OfUser(g.users.Lookup(key)).ProxyURL(), "http://")
}

// SharedProxyAddr returns the shared egress proxy listener's address.
func SharedProxyAddr(g *Guard) string { return g.proxyAddr }

// DisposeUser disposes user key's session as the idle sweep does.
func DisposeUser(ctx context.Context, g *Guard, key string) error {
	return g.users.DisposeNow(ctx, key)
}

// DefaultContextPage returns a page target in Chrome's default context
// (the launched browser's first tab), which no agent can see.
func DefaultContextPage(ctx context.Context, g *Guard) (string, error) {
	ts, err := g.targets.List(ctx)
	if err != nil {
		return "", err
	}
	res, err := g.mux.Call(ctx, "", "Target.getBrowserContexts", nil)
	if err != nil {
		return "", err
	}
	var r struct {
		Default string `json:"defaultBrowserContextId"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Default == "" {
		return "", fmt.Errorf("no default context in %s: %v", res, err)
	}
	for _, t := range ts {
		if t.Type == "page" && t.BrowserContextID == r.Default {
			return t.TargetID, nil
		}
	}
	return "", nil
}
