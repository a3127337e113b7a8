package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/cdpguard/cdpguard/internal/mcpserver"
	"github.com/cdpguard/cdpguard/internal/users"
)

// mcpBodyLimit bounds one MCP request: tool arguments are URLs, refs,
// text to type and small functions.
const mcpBodyLimit = 4 << 20

// mcpState is the guard's MCP server (/mcp), built on first use.
type mcpState struct {
	once sync.Once
	srv  *mcpserver.Server
}

// serveMCP serves /mcp. ServeHTTP has refused foreign Hosts and web
// pages. There is no auth gate: a 401 would start an MCP client's OAuth
// flow; a missing required user header is a 400 naming it.
func (g *Guard) serveMCP(w http.ResponseWriter, r *http.Request) {
	if g.cfg.DisableMCP {
		http.Error(w, "cdpguard: the MCP server is off (--mcp=false)", http.StatusNotFound)
		return
	}
	if r.Header.Get(g.cfg.SessionHeader) == "" && g.cfg.RequireSessionHeader {
		http.Error(w, "cdpguard: the "+g.cfg.SessionHeader+" header is required (--require-session-header)", http.StatusBadRequest)
		return
	}
	if _, err := g.keyOf(r.Header); err != nil { // an unknown group (unknownGroup: refuse), a group change mid-life
		http.Error(w, "cdpguard: "+err.Error(), http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, mcpBodyLimit)
	srv := g.mcpServer()
	if srv == nil {
		http.Error(w, "cdpguard: shutting down", http.StatusServiceUnavailable)
		return
	}
	srv.Handler().ServeHTTP(w, r)
}

// mcpServer builds the MCP server once; nil when the guard is closing.
func (g *Guard) mcpServer() *mcpserver.Server {
	g.mcp.once.Do(func() {
		srv := mcpserver.New(mcpserver.Options{
			Backend: mcpBackend{g},
			PolicyFor: func(user string) ([]string, string) {
				grp := g.groupFor(user)
				return grp.Policy.Origins(), grp.Instructions
			},
			UserKey: g.keyOf,
			Decide: func(user, u string) (bool, string) {
				d := g.decideForKey(user, g.users.Lookup(user), u)
				return d.Allowed, d.Reason
			},
			Granted: func(user string) []string {
				return g.scopes.OfUser(g.users.Lookup(user)).Grants().Hosts()
			},
			HasState:      func(user string) bool { return g.users.Lookup(user) != nil },
			SessionHeader: g.cfg.SessionHeader,
			UploadEnabled: g.cfg.UploadDir != "",
			Linger:        mcpLinger(g.cfg.SessionIdle),
			OnToolCall:    g.metrics.ToolCall,
			CallTimeout:   g.cfg.MCPCallTimeout,
			DialogWait:    g.mcpDialogWait(),
			ImageMaxBytes: g.cfg.MCPImageMaxBytes,
			ImageMaxSide:  g.cfg.MCPImageMaxSide,
			Version:       mcpVersion(g.cfg.Version),
			Logger:        g.log,
		})
		g.agents.mu.Lock()
		defer g.agents.mu.Unlock()
		if g.ctx.Err() != nil {
			return
		}
		g.wg.Add(1)
		go func() { // closes the MCP connections at Close
			defer g.wg.Done()
			srv.Run(g.ctx)
		}()
		g.mcp.srv = srv
	})
	return g.mcp.srv
}

// mcpVersion is the serverInfo.version: cdpguard's, not the browser's.
func mcpVersion(v string) string {
	if v == "" {
		return "dev"
	}
	return v
}

// mcpDialogWait is how long a dialog on an MCP-driven tab waits for
// browser_handle_dialog.
func (g *Guard) mcpDialogWait() time.Duration {
	if g.cfg.MCPDialogWait > 0 {
		return g.cfg.MCPDialogWait
	}
	return mcpserver.DefaultDialogWait
}

// warnSharedMCP says once, at start, that header-less MCP clients share
// one browser context when the header is not required.
func (g *Guard) warnSharedMCP() {
	if !g.cfg.DisableMCP && !g.cfg.RequireSessionHeader {
		g.log.Warn("MCP clients without the " + g.cfg.SessionHeader + " header share one browser context (tabs, cookies, storage); set --require-session-header when several users reach /mcp")
	}
}

// mcpLinger keeps an MCP user's agent connection open between tool calls,
// but short enough that --session-idle disposal still happens about on time.
func mcpLinger(idle time.Duration) time.Duration {
	if idle > 0 && idle/4 < time.Minute {
		return max(idle/4, 50*time.Millisecond)
	}
	return time.Minute
}

// mcpBackend connects the MCP tools to the guard as an in-process agent.
type mcpBackend struct{ g *Guard }

// Open relays the pipe as one agent of user, exactly as serveAgent relays a
// WebSocket: same interceptor (firewall, isolation), same event filter,
// same registration for dialogs and blocked-request events.
func (b mcpBackend) Open(ctx context.Context, key string, p *mcpserver.Pipe) (<-chan struct{}, error) {
	g := b.g
	if !g.ready.Load() {
		return nil, errors.New("cdpguard: not ready (the browser is starting or restarting); try again shortly")
	}
	g.agents.mu.Lock()
	if g.ctx.Err() != nil {
		g.agents.mu.Unlock()
		return nil, errors.New("cdpguard: shutting down")
	}
	g.wg.Add(1)
	g.agents.mu.Unlock()
	ok := false
	defer func() {
		if !ok {
			g.wg.Done()
		}
	}()
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u, err := g.acquireUser(actx, key)
	if err != nil {
		return nil, fmt.Errorf("cdpguard: %w", err)
	}
	a, err := g.admitAgent(actx, p.AgentSide(), agentSpec{name: "mcp", key: key, user: u})
	if err != nil {
		g.users.Release(u)
		return nil, fmt.Errorf("cdpguard: %w", err)
	}
	// The model answers a dialog in its next turn: this agent's dialogs
	// wait --mcp-dialog-wait for browser_handle_dialog, not --dialog-grace.
	g.dialogs.SetOwnerGrace(a, g.mcpDialogWait())
	released := make(chan struct{})
	ok = true
	go func() { // the agent: ends when the pipe closes or the guard closes it
		defer g.wg.Done()
		defer close(released)
		err := a.Serve(g.ctx)
		g.dropAgent(a)
		g.users.Release(u)
		if errors.Is(err, mcpserver.ErrClosed) {
			err = nil
		}
		g.log.Info("agent disconnected", "remote", "mcp", "user", key, "err", err)
	}()
	return released, nil
}

// Dispose disposes the user's context at once (browser_close), or closes
// the user's tabs when a CDP client still holds the context.
func (b mcpBackend) Dispose(ctx context.Context, key string) (string, error) {
	g := b.g
	err := g.users.DisposeNow(ctx, key)
	if !errors.Is(err, users.ErrInUse) {
		if err != nil {
			return "", fmt.Errorf("cdpguard: closing the browser: %w", err)
		}
		return "The browser was closed: tabs, cookies and storage are gone. browser_navigate starts afresh.", nil
	}
	if u := g.users.Lookup(key); u != nil {
		for _, id := range g.users.Targets(u) {
			_, _ = g.mux.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": id})
		}
	}
	return "The tabs were closed. Another connection of this user still holds the browser context, so its cookies and storage stay until it ends.", nil
}
