package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// This file holds the /mcp endpoint's bounds on what clients make the
// guard hold: open MCP sessions (each a server session the SDK keeps,
// until its idle bound closes it), and request bodies being read, their
// bytes from the guard's one byte budget (internal/bounds). A request past
// a cap is refused with an HTTP error naming it, which MCP clients show;
// open sessions keep working.

// Defaults of Limits.
const (
	DefaultMaxSessions        = 256
	DefaultMaxSessionsPerUser = 8
	DefaultSessionIdle        = 5 * time.Minute
	DefaultMaxBodies          = 64
	DefaultMaxBodiesPerUser   = 8
	DefaultBodyTimeout        = 10 * time.Second
)

// The caps a request can be refused by (the label values of
// cdpguard_mcp_refused_total, besides the budget's bounds).
const (
	CapSessionsPerUser = "sessions_per_user"
	CapSessions        = "sessions"
	CapBodiesPerUser   = "bodies_per_user"
	CapBodies          = "bodies"
	CapBodyTimeout     = "body_timeout"
)

// Limits are the /mcp endpoint's bounds. Zero fields take the defaults; a
// negative cap is none.
type Limits struct {
	// MaxSessions and MaxSessionsPerUser cap the open MCP sessions, in all
	// and per user: an initialize past either is refused (503, 429).
	MaxSessions, MaxSessionsPerUser int
	// SessionIdle closes a session without requests for this long.
	SessionIdle time.Duration
	// MaxBodies and MaxBodiesPerUser cap the request bodies being read at
	// once, in all and per user (503, 429).
	MaxBodies, MaxBodiesPerUser int
	// BodyTimeout bounds reading one request body (408 past it).
	BodyTimeout time.Duration
}

// withDefaults fills zero fields and turns negative caps into none (0).
func (l Limits) withDefaults() Limits {
	capOf := func(v *int, d int) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		}
	}
	capOf(&l.MaxSessions, DefaultMaxSessions)
	capOf(&l.MaxSessionsPerUser, DefaultMaxSessionsPerUser)
	capOf(&l.MaxBodies, DefaultMaxBodies)
	capOf(&l.MaxBodiesPerUser, DefaultMaxBodiesPerUser)
	if l.SessionIdle <= 0 {
		l.SessionIdle = DefaultSessionIdle
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	return l
}

// Budget is the receive side of the guard's byte budget (bounds.Budget).
type Budget interface {
	Reserve(user, what string, n int64) error
	Release(user string, n int64)
}

// refusal is a request refused by a cap: the HTTP status, and the text the
// client shows.
type refusal struct {
	cap    string
	status int
	msg    string
}

func (r *refusal) Error() string { return r.msg }

// refuse answers the request with err (a *refusal is counted) and closes
// the connection after the answer: the server would otherwise read what
// is left of the body first, without a bound (a stalled client holds it),
// so any further read fails at once.
func (e *Endpoint) refuse(w http.ResponseWriter, err error) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	var r *refusal
	if !errors.As(err, &r) {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if e.o.OnRefused != nil {
		e.o.OnRefused(r.cap)
	}
	// A JSON-RPC error: MCP clients show its message (the Go SDK's shows
	// only the status of a plain-text answer); its text names the cap.
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32000, "message": r.msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(r.status)
	_, _ = w.Write(b)
}

// slots counts things held at once, in all and per user, under two caps
// (0: none).
type slots struct {
	mu    sync.Mutex
	n     int
	users map[string]int
}

// take holds one more for user, or returns which cap refused it.
func (s *slots) take(user string, total, perUser int) (refusedBy string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if perUser > 0 && s.users[user] >= perUser {
		return CapBodiesPerUser, false
	}
	if total > 0 && s.n >= total {
		return CapBodies, false
	}
	if s.users == nil {
		s.users = map[string]int{}
	}
	s.n++
	s.users[user]++
	return "", true
}

// give lets go of one user held.
func (s *slots) give(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n--
	if s.users[user]--; s.users[user] <= 0 {
		delete(s.users, user)
	}
}

// sessionCount keeps which user opened each live MCP session, and the
// sessions being made (an initialize in progress).
type sessionCount struct {
	mu      sync.Mutex
	owner   map[string]string // session id → user, pruned to the live ones
	pending map[string]int    // user → initializes in progress
}

// admitSession holds a place for a new session of user, or refuses it
// naming the cap. live lists the sessions the SDK still has; the caller
// calls sessionMade when the request ends.
func (c *sessionCount) admitSession(user string, l Limits, live func() []string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner == nil {
		c.owner, c.pending = map[string]string{}, map[string]int{}
	}
	alive := map[string]bool{}
	for _, id := range live() {
		alive[id] = true
	}
	mine := c.pending[user]
	for id, u := range c.owner {
		if !alive[id] {
			delete(c.owner, id)
			continue
		}
		if u == user {
			mine++
		}
	}
	total := len(c.owner)
	for _, n := range c.pending {
		total += n
	}
	switch {
	case l.MaxSessionsPerUser > 0 && mine >= l.MaxSessionsPerUser:
		return &refusal{cap: CapSessionsPerUser, status: http.StatusTooManyRequests, msg: fmt.Sprintf(
			"cdpguard: this user has %d open MCP sessions, the cap (%s); end one (DELETE) or let one idle out (%v)",
			mine, CapSessionsPerUser, l.SessionIdle)}
	case l.MaxSessions > 0 && total >= l.MaxSessions:
		return &refusal{cap: CapSessions, status: http.StatusServiceUnavailable, msg: fmt.Sprintf(
			"cdpguard: the guard has %d open MCP sessions, the cap (%s); try again later", total, CapSessions)}
	}
	c.pending[user]++
	return nil
}

// sessionMade ends an initialize admitSession let in: id is the session it
// made ("" when none), counted as user's while the SDK keeps it.
func (c *sessionCount) sessionMade(user, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[user]--; c.pending[user] <= 0 {
		delete(c.pending, user)
	}
	if id != "" {
		c.owner[id] = user
	}
}
