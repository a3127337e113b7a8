package cdpguard

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

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

// serveRead answers GET /read?url=...&offset=...&maxChars=... with a
// ReadResult as JSON, read in the user's reader tab. A URL the policy
// blocks is answered 403, naming the host and the reachable origins.
func (g *Guard) serveRead(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "cdpguard: use GET for /read", http.StatusMethodNotAllowed)
		return
	}
	if !g.ready.Load() {
		http.Error(w, "cdpguard: not ready", http.StatusServiceUnavailable)
		return
	}
	q := r.URL.Query()
	target := q.Get("url")
	if target == "" {
		http.Error(w, "cdpguard: /read needs a url parameter", http.StatusBadRequest)
		return
	}
	var nums [2]int
	for i, k := range []string{"offset", "maxChars"} {
		if s := q.Get(k); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				http.Error(w, "cdpguard: /read: "+k+" must be a number ≥ 0", http.StatusBadRequest)
				return
			}
			nums[i] = n
		}
	}
	key, ok := g.userKey(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.readLoadTimeout()+g.readSettleTimeout()+readCallTimeout)
	defer cancel()
	res, err := g.Read(ctx, key, target, nums[0], nums[1])
	if errors.Is(err, ErrReadRefused) {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	if err != nil {
		http.Error(w, "cdpguard: /read: "+err.Error(), http.StatusBadGateway)
		return
	}
	g.writeJSON(w, res)
}
