package cdpguard

import (
	"errors"
	"net/http"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/bounds"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/users"
)

// This file wires the caps on users (internal/users/limits.go) to the
// guard: their Config values with defaults applied, the session header's
// length checked on every request, and the refusals' HTTP answers.

// userLimits returns the caps on new users from the Config, defaults
// applied; refusals are counted in cdpguard_cap_refused_total.
func (g *Guard) userLimits() users.Limits {
	return users.Limits{
		MaxUsers:    bounds.Cap(g.cfg.MaxUsers, DefaultMaxUsers),
		MaxContexts: bounds.Cap(g.cfg.MaxContexts, DefaultMaxContexts),
		MaxTabs:     bounds.Cap(g.cfg.MaxTabs, DefaultMaxTabs),
		Rate:        bounds.Cap(g.cfg.NewUsersPerSecond, DefaultNewUsersPerSecond),
		Burst:       bounds.Cap(g.cfg.NewUsersBurst, DefaultNewUsersBurst),
		OnCap:       g.metrics.Bounds.Capped,
	}
}

// maxConnsPerUser is the cap on one user's agent connections (0: none).
func (g *Guard) maxConnsPerUser() int {
	return bounds.Cap(g.cfg.MaxConnsPerUser, DefaultMaxConnsPerUser)
}

// refuseHeader refuses (431) a request whose session header is over its
// cap, on every path before anything keys a user by it, and counts it.
func (g *Guard) refuseHeader(w http.ResponseWriter, r *http.Request) bool {
	err := users.CheckKey(g.cfg.SessionHeader, r.Header.Get(g.cfg.SessionHeader),
		bounds.Cap(g.cfg.SessionHeaderBytes, DefaultSessionHeaderBytes))
	if err == nil {
		return false
	}
	g.metrics.Bounds.Capped(users.CapHeader)
	return refuseCap(w, err)
}

// holdAgent holds the user of an agent's WebSocket (and one of the user's
// connection slots) before the upgrade (admission.Entry.Hold), so that a
// cap refuses with an HTTP status naming it; false when it answered.
func (g *Guard) holdAgent(w http.ResponseWriter, r *http.Request, e *admission.Entry, key string) bool {
	err := e.Hold(r.Context(), key)
	if err == nil {
		return true
	}
	if !refuseCap(w, err) {
		g.log.Warn("agent connection refused", "remote", r.RemoteAddr, "user", clip.String(key), "err", err)
		http.Error(w, "cdpguard: "+err.Error(), http.StatusServiceUnavailable)
	}
	return false
}

// refuseCap answers a request refused by a cap on users with the cap's
// status and message; false when err is no such refusal.
func refuseCap(w http.ResponseWriter, err error) bool {
	ce, ok := errors.AsType[*users.CapError](err)
	if !ok {
		return false
	}
	http.Error(w, "cdpguard: "+ce.Msg, ce.Status())
	return true
}
