package cdpguard

import "github.com/chromedp/cdproto/cdp/jsonv2"

// policyView is what /policy and Guard.getPolicy return to the user whose
// key is key: the policy in force for their group plus the operator's
// instructions and search URL, so an agent learns them before its first
// miss.
func (g *Guard) policyView(key string) any {
	grp := g.groupFor(key)
	var m map[string]jsonv2.Value
	b, err := jsonv2.Marshal(grp.Policy)
	if err != nil || jsonv2.Unmarshal(b, &m) != nil {
		return grp.Policy
	}
	if grp.Instructions != "" {
		m["instructions"], _ = jsonv2.Marshal(grp.Instructions)
	}
	if grp.Name != "" {
		m["group"], _ = jsonv2.Marshal(grp.Name)
	}
	if g.cfg.SearchURL != "" {
		m["searchUrl"], _ = jsonv2.Marshal(g.cfg.SearchURL)
	}
	return m
}
