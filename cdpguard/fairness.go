package cdpguard

import "github.com/cdpguard/cdpguard/internal/relay"

// share returns the relay share of user key: one rate limit, one window of
// in-flight commands and one count of queued bytes (bounds.go) over all
// the user's connections, so that a user
// cannot get around the per-connection limit by opening more connections,
// nor slow another user's tab set-up by flooding the browser. Shares are
// kept for the guard's life (a few hundred bytes per user key).
func (g *Guard) share(key string) *relay.Share {
	if s, ok := g.agents.shares.Load(key); ok {
		return s.(*relay.Share)
	}
	s, _ := g.agents.shares.LoadOrStore(key, relay.NewShare(0, 0))
	return s.(*relay.Share)
}
