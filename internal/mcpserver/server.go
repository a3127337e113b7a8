// Package mcpserver is cdpguard's MCP server (/mcp): browser tools for a
// model, run as an in-process agent of the guard. Every tool drives the
// user's browser context through an in-memory agent connection that the
// guard relays like any CDP client (relay, method firewall, user
// isolation), so the guard's invariants hold for the tools by
// construction. No tool runs code outside the browser.
package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits on tool arguments and results.
const (
	maxURL      = 8 << 10
	maxText     = 64 << 10
	maxFunction = 64 << 10
	maxSnapshot = 200_000
	readSection = 30_000
)

// maxRetired bounds the users remembered after the sweep let them go.
const maxRetired = 10_000

// Defaults of the Options bounds.
const (
	DefaultCallTimeout   = 30 * time.Second
	DefaultDialogWait    = 60 * time.Second
	DefaultImageMaxBytes = 1 << 20
	DefaultImageMaxSide  = 2000
)

// Backend is the guard side of the tools.
type Backend interface {
	// Open relays p's AgentSide as a new agent connection of user (the
	// session header's value). released is closed once the guard has let
	// go of the connection.
	Open(ctx context.Context, user string, p *Pipe) (released <-chan struct{}, err error)
	// Dispose disposes the user's browser context at once when no other
	// connection uses it, or else closes the user's tabs; it returns what
	// it did, for the model.
	Dispose(ctx context.Context, user string) (string, error)
}

// Options configures a Server.
type Options struct {
	Backend Backend
	// Origins are the reachable origins, shown to the model.
	Origins []string
	// Decide reports whether the allowlist (with the user's session
	// grants) lets a URL through for user, and why not.
	Decide func(user, url string) (ok bool, reason string)
	// Granted, if set, returns the hosts a human allowed for user's
	// session (grants); blocked-URL errors name them besides the origins.
	Granted func(user string) []string
	// Instructions is the operator's EXTRA_INSTRUCTIONS.
	Instructions string
	// PolicyFor, if set, returns the origins and instructions in force for
	// user (their policy group's, after the latest reload); it replaces
	// Origins and Instructions. Call PolicyChanged after a reload.
	PolicyFor func(user string) (origins []string, instructions string)
	// UserKey, if set, returns the user a request's headers name (the
	// guard adds the policy group), or why the request is refused; nil
	// means the SessionHeader's value.
	UserKey func(h http.Header) (string, error)
	// SessionHeader names the header that keys a user.
	SessionHeader string
	// UploadEnabled adds browser_file_upload (the guard confines the files
	// to its upload directory).
	UploadEnabled bool
	// Linger is how long a user's agent connection stays open after the
	// last tool call; the guard's idle disposal counts from its end. Zero
	// means one minute.
	Linger time.Duration
	// OnToolCall, when set, counts every tool call by tool name and
	// outcome ("ok", "error" or "canceled").
	OnToolCall func(tool, outcome string)
	// CallTimeout bounds every tool call (DefaultCallTimeout when zero): a
	// call that hits it ends with a TimeoutError and abandons what it
	// waited for, so the user's next call starts at once.
	CallTimeout time.Duration
	// DialogWait is how long a dialog on a tab the tools drive waits for
	// browser_handle_dialog before the guard dismisses it
	// (DefaultDialogWait when zero). The guard enforces it (its dialog
	// handler); the server only words it.
	DialogWait time.Duration
	// ImageMaxBytes and ImageMaxSide bound every image result (encoded
	// bytes, pixels on the long side); zero means the defaults.
	ImageMaxBytes int
	ImageMaxSide  int
	// HasState, if set, reports whether the guard still holds user's
	// browser context; after the tools let an idle user go, the next call
	// says plainly when the context was disposed meanwhile.
	HasState func(user string) bool
	// SessionIdle closes an MCP session without requests for this long
	// (DefaultSessionIdle when zero).
	SessionIdle time.Duration
	// Version is cdpguard's version, the MCP serverInfo.version.
	Version string
	Logger  *slog.Logger
}

// Server is the MCP server. Use New, mount Handler, and Run it.
type Server struct {
	opts    Options
	mcp     *mcp.Server
	handler http.Handler
	ctx     context.Context // ends at Run's end
	cancel  context.CancelFunc

	known map[string]bool // tool names
	names []string

	sessions sessionCount // the open MCP sessions' users (limits.go)

	mu      sync.Mutex
	users   map[string]*user
	retired map[string]time.Time // users the sweep let go, and when (bounded by maxRetired)
	wg      sync.WaitGroup       // goroutines answering dialogs
}

// New returns a Server; Run must be called for it to end its connections.
func New(opts Options) *Server {
	if opts.Linger <= 0 {
		opts.Linger = time.Minute
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.DialogWait <= 0 {
		opts.DialogWait = DefaultDialogWait
	}
	if opts.ImageMaxBytes <= 0 {
		opts.ImageMaxBytes = DefaultImageMaxBytes
	}
	if opts.ImageMaxSide <= 0 {
		opts.ImageMaxSide = DefaultImageMaxSide
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SessionIdle <= 0 {
		opts.SessionIdle = DefaultSessionIdle
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{opts: opts, users: map[string]*user{}, retired: map[string]time.Time{}, ctx: ctx, cancel: cancel}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "cdpguard", Version: opts.Version}, &mcp.ServerOptions{
		Instructions: s.instructions(),
		Capabilities: &mcp.ServerCapabilities{},
	})
	s.addTools()
	s.mcp.AddReceivingMiddleware(s.unknownTool, s.initializeFor)
	s.handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		// The guard checks Host itself (IP literals, localhost and
		// --public-host names): the SDK's own check would refuse the
		// compose service name on a loopback connection.
		DisableLocalhostProtection: true,
		SessionTimeout:             opts.SessionIdle,
		Logger:                     opts.Logger,
	})
	return s
}

// Handler serves MCP streamable HTTP. The caller has already refused
// foreign Hosts, web pages and (when required) a missing user header.
func (s *Server) Handler() http.Handler { return s.handler }

// Run closes idle users' connections until ctx ends, then closes every
// connection and waits for the server's goroutines.
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(max(s.opts.Linger/4, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.cancel()
			for ss := range s.mcp.Sessions() { // their SDK goroutines end with them
				_ = ss.Close()
			}
			s.mu.Lock()
			for _, u := range s.users {
				u.mu.Lock()
				p := u.evPipe
				u.mu.Unlock()
				if p != nil {
					p.Close()
				}
			}
			s.mu.Unlock()
			s.wg.Wait()
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// liveSessions returns the ids of the MCP sessions the SDK keeps.
func (s *Server) liveSessions() []string {
	var ids []string
	for ss := range s.mcp.Sessions() {
		ids = append(ids, ss.ID())
	}
	return ids
}

// sweep closes the connections of users idle for Linger, so that the
// guard's idle disposal (--session-idle) starts counting.
func (s *Server) sweep() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, u := range s.users {
		select {
		case u.sem <- struct{}{}:
		default:
			continue // a call is running
		}
		u.mu.Lock()
		idle := time.Since(u.lastUse) > s.opts.Linger
		u.mu.Unlock()
		if idle {
			u.reset()
			u.retired = true
			delete(s.users, k)
			if len(s.retired) >= maxRetired {
				clear(s.retired) // forgetting only loses a note
			}
			s.retired[k] = time.Now()
		}
		<-u.sem
	}
}

// goBounded runs f in a goroutine the server owns, with a bounded context.
func (s *Server) goBounded(f func(ctx context.Context)) {
	if s.ctx.Err() != nil {
		return // Run has ended: the connections are closed
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
		defer cancel()
		f(ctx)
	}()
}

// lockUser returns the request's user, locked for one call. A user the
// sweep retired between the lookup and the lock is looked up again, so no
// call runs on state the sweep no longer sees.
func (s *Server) lockUser(ctx context.Context, h http.Header) (*user, error) {
	for {
		u, err := s.userFor(h)
		if err != nil {
			return nil, err
		}
		if err := u.lock(ctx); err != nil {
			return nil, err
		}
		if !u.retired {
			return u, nil
		}
		u.unlock()
	}
}

// userFor returns the state of the user the request's header names.
func (s *Server) userFor(h http.Header) (*user, error) {
	key := ""
	if s.opts.UserKey != nil {
		k, err := s.opts.UserKey(h)
		if err != nil {
			return nil, err
		}
		key = k
	} else if h != nil {
		key = h.Get(s.opts.SessionHeader)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[key]
	if u == nil {
		u = newUser(s, key)
		if at, ok := s.retired[key]; ok {
			u.idleSince = at
			delete(s.retired, key)
		}
		s.users[key] = u
	}
	return u, nil
}

// policyFor returns the origins and instructions in force for user.
func (s *Server) policyFor(user string) ([]string, string) {
	if s.opts.PolicyFor != nil {
		return s.opts.PolicyFor(user)
	}
	return s.opts.Origins, s.opts.Instructions
}

// PolicyChanged tells the server the policy was reloaded: the tools are
// registered again with descriptions that carry the new allowlist, which
// sends every session notifications/tools/list_changed; sessions that
// initialize from now on get the new instructions.
func (s *Server) PolicyChanged() { s.addTools() }

// initializeFor answers initialize with the instructions of the user the
// request names (their group's allowlist, as in force now).
func (s *Server) initializeFor(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && method == "initialize" {
			var h http.Header
			if ex := req.GetExtra(); ex != nil {
				h = ex.Header
			}
			key := ""
			if s.opts.UserKey != nil {
				key, _ = s.opts.UserKey(h)
			} else if h != nil {
				key = h.Get(s.opts.SessionHeader)
			}
			ir.Instructions = s.instructionsFor(key)
		}
		return res, err
	}
}

// reachable is the sentence listing the allowlist in force for user.
func (s *Server) reachable(user string) string {
	origins, _ := s.policyFor(user)
	if len(origins) == 0 {
		return "No website is reachable: the allowlist is empty."
	}
	return "Reachable origins (everything else is blocked): " + strings.Join(origins, ", ") + "."
}

// granted is the sentence naming user's session grants, "" without any.
func (s *Server) granted(user string) string {
	if s.opts.Granted == nil {
		return ""
	}
	hosts := s.opts.Granted(user)
	if len(hosts) == 0 {
		return ""
	}
	return " Also allowed for this session: " + strings.Join(hosts, ", ") + "."
}

// instructions is the note on URL-taking tools: the default group's text.
func (s *Server) instructions() string { return s.instructionsFor("") }

// instructionsFor is the initialize text for user.
func (s *Server) instructionsFor(user string) string {
	_, extra := s.policyFor(user)
	var b strings.Builder
	b.WriteString("This browser sits behind an allowlist. ")
	b.WriteString(s.reachable(user))
	b.WriteString(" Read pages with browser_read (pass url to open and read in one call; long pages come in sections, continue with offset). Use browser_snapshot only to get element refs for browser_click, browser_type, browser_select_option and browser_hover.")
	if extra != "" {
		b.WriteString(" ")
		b.WriteString(extra)
	}
	return b.String()
}

// unknownTool answers a call of a tool that does not exist with a tool
// error the model can act on, rather than a protocol error.
func (s *Server) unknownTool(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil && !s.known[r.Params.Name] {
				res := &mcp.CallToolResult{}
				res.SetError(fmt.Errorf("there is no tool %q; the tools are %s", clip(r.Params.Name, 60), strings.Join(s.names, ", ")))
				return res, nil
			}
		}
		return next(ctx, method, req)
	}
}
