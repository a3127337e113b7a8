package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// BodyLimit bounds one MCP request: tool arguments are URLs, refs, text to
// type and small functions.
const BodyLimit = 4 << 20

// EndpointOptions configures an Endpoint.
type EndpointOptions struct {
	// Server is the options of the Server the Endpoint builds on first
	// use. Its UserKey and SessionHeader also gate every request.
	Server Options
	// RequireSessionHeader refuses (400) a request without the session
	// header.
	RequireSessionHeader bool
	// Spawn runs f on a goroutine its owner waits for at its end, with a
	// context that ends then; it reports false, without running f, once
	// the owner is closing.
	Spawn func(f func(ctx context.Context)) bool
	// Limits bound sessions and request bodies (zero: the defaults).
	Limits Limits
	// Budget, if set, is the byte budget request bodies are read from.
	Budget Budget
	// OnRefused, if set, counts a request refused by a cap, by cap
	// (CapSessions..., or the budget's bound).
	OnRefused func(cap string)
}

// Endpoint serves /mcp for a guard: it gates each request, builds the
// Server on first use and runs it until the guard's end (Spawn), and
// passes policy changes on to it. A nil *Endpoint is the MCP server
// switched off (--mcp=false): it answers 404 and ignores policy changes.
type Endpoint struct {
	o      EndpointOptions
	limits Limits // o.Limits, defaults applied
	bodies slots  // request bodies being read
	once   sync.Once

	mu  sync.Mutex
	srv *Server // nil until built, and when the guard was closing then
}

// NewEndpoint returns an Endpoint; its Server is built on the first
// request.
func NewEndpoint(o EndpointOptions) *Endpoint {
	l := o.Limits.withDefaults()
	o.Server.SessionIdle = l.SessionIdle
	return &Endpoint{o: o, limits: l}
}

// ServeHTTP serves /mcp. The guard has refused foreign Hosts and web pages
// before. There is no auth gate: a 401 would start an MCP client's OAuth
// flow; a missing required user header is a 400 naming it, and a refused
// user key (an unknown policy group, a group change mid-life) a 403.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e == nil {
		http.Error(w, "cdpguard: the MCP server is off (--mcp=false)", http.StatusNotFound)
		return
	}
	hdr := e.o.Server.SessionHeader
	if r.Header.Get(hdr) == "" && e.o.RequireSessionHeader {
		http.Error(w, "cdpguard: the "+hdr+" header is required (--require-session-header)", http.StatusBadRequest)
		return
	}
	user := r.Header.Get(hdr)
	if e.o.Server.UserKey != nil {
		k, err := e.o.Server.UserKey(r.Header)
		if err != nil {
			http.Error(w, "cdpguard: "+err.Error(), http.StatusForbidden)
			return
		}
		user = k
	}
	srv := e.server()
	if srv == nil {
		http.Error(w, "cdpguard: shutting down", http.StatusServiceUnavailable)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get(sessionIDHeader) == "" { // a new session
		if err := srv.sessions.admitSession(user, e.limits, srv.liveSessions); err != nil {
			e.refuse(w, err)
			return
		}
		defer func() { srv.sessions.sessionMade(user, w.Header().Get(sessionIDHeader)) }()
	}
	release, err := e.readBody(w, r, user)
	if err != nil {
		e.refuse(w, err)
		return
	}
	defer release()
	srv.Handler().ServeHTTP(w, r)
}

// sessionIDHeader is the streamable HTTP transport's session header.
const sessionIDHeader = "Mcp-Session-Id"

// server builds the Server once; nil when the guard is closing.
func (e *Endpoint) server() *Server {
	e.once.Do(func() {
		srv := New(e.o.Server)
		if !e.o.Spawn(srv.Run) { // closes the MCP connections at the guard's end
			return
		}
		e.mu.Lock()
		e.srv = srv
		e.mu.Unlock()
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.srv
}

// PolicyChanged tells the Server, if one was built, that the policy
// changed (tools/list_changed to every session).
func (e *Endpoint) PolicyChanged() {
	if e == nil {
		return
	}
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	if srv != nil {
		srv.PolicyChanged()
	}
}

// WarnShared says, once at start, that header-less MCP clients share one
// browser context when the header is not required.
func (e *Endpoint) WarnShared(log *slog.Logger) {
	if e != nil && !e.o.RequireSessionHeader {
		log.Warn("MCP clients without the " + e.o.Server.SessionHeader + " header share one browser context (tabs, cookies, storage); set --require-session-header when several users reach /mcp")
	}
}

// Linger keeps an MCP user's agent connection open between tool calls,
// but short enough that the guard's idle disposal (idle, --session-idle)
// still happens about on time.
func Linger(idle time.Duration) time.Duration {
	if idle > 0 && idle/4 < time.Minute {
		return max(idle/4, 50*time.Millisecond)
	}
	return time.Minute
}

// DialogWait is how long a dialog on an MCP-driven tab waits for
// browser_handle_dialog: d, or DefaultDialogWait when d is not positive.
func DialogWait(d time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return DefaultDialogWait
}

// Version is the serverInfo.version: cdpguard's v, "dev" when unset.
func Version(v string) string {
	if v == "" {
		return "dev"
	}
	return v
}
