package users

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Names of the guard-wide caps on users, as in CapError.Cap and the
// metrics label (cdpguard_cap_refused_total{cap=...}).
const (
	CapUsers       = "users"                // users with a browser context at once
	CapContexts    = "contexts_total"       // browser contexts of all users together
	CapTabs        = "tabs_total"           // open tabs of all users together
	CapNewUsers    = "new_users_rate"       // new users a second (a token bucket)
	CapHeader      = "session_header_bytes" // length of the session header's value
	CapConnections = "connections_per_user" // one user's agent connections
)

// ErrCap is wrapped by every refusal of a cap on users.
var ErrCap = errors.New("cap on users")

// CapError is a refusal of a cap: which cap (the metric's label) and the
// whole message, which names the cap and the flag that sets it. The
// message is short enough for a WebSocket close reason (123 bytes).
type CapError struct {
	Cap string
	Msg string
}

func (e *CapError) Error() string { return e.Msg }

// Unwrap returns ErrCap.
func (e *CapError) Unwrap() error { return ErrCap }

// Status is the HTTP status of the refusal: 429 for what the client
// itself sends too much of (new users too fast, too many connections of
// one user), 431 for an over-long header, 503 for the guard being full.
func (e *CapError) Status() int {
	switch e.Cap {
	case CapNewUsers, CapConnections:
		return http.StatusTooManyRequests
	case CapHeader:
		return http.StatusRequestHeaderFieldsTooLarge
	}
	return http.StatusServiceUnavailable
}

// Limits are the caps the registry applies to new users. A zero field is
// no cap.
type Limits struct {
	// MaxUsers caps the users held at once (with a context, or having one
	// made); MaxContexts the browser contexts of all users together.
	MaxUsers, MaxContexts int
	// MaxTabs caps the open tabs of all users together: each is a
	// renderer's worth of Chromium's memory, and a user key is only a
	// header, so the per-user tab cap alone does not bound the browser.
	MaxTabs int
	// Rate and Burst are the token bucket of new users: Rate a second, at
	// most Burst at once. Rate <= 0 is no cap.
	Rate  float64
	Burst int
	// OnCap, when set, is told of every refusal (the cap's name).
	OnCap func(capName string)
}

// SetLimits puts l in force for the users made from now on.
func (r *Registry) SetLimits(l Limits) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits = l
	r.bucket = bucket{rate: l.Rate, burst: float64(max(l.Burst, 1)), tokens: float64(max(l.Burst, 1)), last: r.now()}
}

// admitNew returns why a new user may not be made now, or nil, and then
// counts it against the bucket. The caller holds r.mu. The guard-wide caps
// are checked first, so a user they refuse takes no token.
func (r *Registry) admitNew() *CapError {
	l := r.limits
	var e *CapError
	switch {
	case l.MaxUsers > 0 && len(r.users) >= l.MaxUsers:
		e = &CapError{Cap: CapUsers, Msg: fmt.Sprintf("users cap (--max-users=%d) reached: a new user is refused until one idles out", l.MaxUsers)}
	case l.MaxContexts > 0 && r.contextsInAll() >= l.MaxContexts:
		e = contextsCapError(l.MaxContexts)
	case l.Rate > 0 && !r.bucket.take(r.now()):
		e = &CapError{Cap: CapNewUsers, Msg: fmt.Sprintf("new-users rate cap (--new-users-per-second=%g, burst %d) reached: try again shortly", l.Rate, max(l.Burst, 1))}
	}
	if e != nil && l.OnCap != nil {
		l.OnCap(e.Cap)
	}
	return e
}

func contextsCapError(limit int) *CapError {
	return &CapError{Cap: CapContexts, Msg: fmt.Sprintf("contexts cap (--max-contexts=%d) reached: the browser holds as many browser contexts as it may", limit)}
}

// contextsInAll counts the browser contexts of all users, those being
// made included. The caller holds r.mu.
func (r *Registry) contextsInAll() int {
	n := len(r.owner)
	for _, u := range r.users {
		if u.Primary == "" {
			n++ // its primary context is being made
		}
	}
	return n
}

// CheckContextsInAll returns a *CapError when the browser holds as many
// contexts as all users together may have (Target.createBrowserContext by
// a user), and tells OnCap.
func (r *Registry) CheckContextsInAll() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.limits
	if l.MaxContexts <= 0 || r.contextsInAll() < l.MaxContexts {
		return nil
	}
	if l.OnCap != nil {
		l.OnCap(CapContexts)
	}
	return contextsCapError(l.MaxContexts)
}

// CheckTabsInAll returns a *CapError when the users' open tabs are as
// many as all users together may have (a tab an agent asks for, /json/new,
// the reader's tab), and tells OnCap.
func (r *Registry) CheckTabsInAll() error {
	n := r.tabsInAll()
	r.mu.Lock()
	l := r.limits
	r.mu.Unlock()
	if l.MaxTabs <= 0 || n < l.MaxTabs {
		return nil
	}
	if l.OnCap != nil {
		l.OnCap(CapTabs)
	}
	return tabsCapError(l.MaxTabs)
}

// OverTabsInAll returns a *CapError when the users' open tabs are more
// than all users together may have: a tab that appeared past
// CheckTabsInAll (a popup, creates that raced) is closed. It counts
// nothing; the caller does.
func (r *Registry) OverTabsInAll() *CapError {
	n := r.tabsInAll()
	r.mu.Lock()
	l := r.limits
	r.mu.Unlock()
	if l.MaxTabs <= 0 || n <= l.MaxTabs {
		return nil
	}
	return tabsCapError(l.MaxTabs)
}

func tabsCapError(limit int) *CapError {
	return &CapError{Cap: CapTabs, Msg: fmt.Sprintf("tabs cap (--max-tabs=%d) reached: the browser holds as many tabs of all users as it may", limit)}
}

// CheckKey returns a *CapError naming header when value, a request's
// session header, is longer than max bytes (max <= 0: no cap). Every user
// key is held in memory while its user lives and written in log lines.
func CheckKey(header, value string, max int) error {
	if max <= 0 || len(value) <= max {
		return nil
	}
	return &CapError{Cap: CapHeader, Msg: fmt.Sprintf("the %s header is %d bytes, over the cap of %d (--session-header-max-bytes)", header, len(value), max)}
}

// bucket is a token bucket: rate tokens a second, at most burst held.
type bucket struct {
	rate, burst, tokens float64
	last                time.Time
}

// take takes one token at now, false when none is left.
func (b *bucket) take(now time.Time) bool {
	if d := now.Sub(b.last).Seconds(); d > 0 {
		b.tokens = min(b.burst, b.tokens+d*b.rate)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
