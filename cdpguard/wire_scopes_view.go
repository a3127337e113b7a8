package cdpguard

import (
	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/scopes"
)

// policyViewFor is policyView for the user key plus the grants of the
// session sc.
func (g *Guard) policyViewFor(key string, sc *scopes.Scope) any {
	v := g.policyView(key)
	m, ok := v.(map[string]jsonv2.Value)
	if !ok {
		return v
	}
	b, err := jsonv2.Marshal(sc.List())
	if err == nil {
		m["grants"] = b
	}
	return m
}
