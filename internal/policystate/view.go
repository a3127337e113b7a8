package policystate

import "github.com/chromedp/cdproto/cdp/jsonv2"

// View is what /policy and Guard.getPolicy return to the user of key: the
// policy in force for their group plus the operator's instructions, the
// group's name, the search URL and, when grants is not nil, their
// session's grants, so that an agent learns them before its first miss.
func (st *State) View(key, searchURL string, grants any) any {
	grp := st.Group(key)
	var m map[string]jsonv2.Value
	b, err := jsonv2.Marshal(grp.Policy)
	if err != nil || jsonv2.Unmarshal(b, &m) != nil {
		return grp.Policy
	}
	add := func(name string, v any) {
		if b, err := jsonv2.Marshal(v); err == nil {
			m[name] = b
		}
	}
	if grp.Instructions != "" {
		add("instructions", grp.Instructions)
	}
	if grp.Name != "" {
		add("group", grp.Name)
	}
	if searchURL != "" {
		add("searchUrl", searchURL)
	}
	if grants != nil {
		add("grants", grants)
	}
	return m
}
