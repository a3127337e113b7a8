package cdpguard

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/mcpserver"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// newMCP wires the MCP endpoint (/mcp, internal/mcpserver) to the guard;
// nil when it is off (--mcp=false).
func (g *Guard) newMCP() *mcpserver.Endpoint {
	if g.cfg.DisableMCP {
		return nil
	}
	return mcpserver.NewEndpoint(mcpserver.EndpointOptions{
		RequireSessionHeader: g.cfg.RequireSessionHeader,
		Spawn:                g.spawn,
		Limits: mcpserver.Limits{
			MaxSessions: g.cfg.MCPMaxSessions, MaxSessionsPerUser: g.cfg.MCPMaxSessionsPerUser,
			SessionIdle: g.cfg.MCPSessionIdle,
			MaxBodies:   g.cfg.MCPMaxBodies, MaxBodiesPerUser: g.cfg.MCPMaxBodiesPerUser,
			BodyTimeout: g.cfg.MCPBodyTimeout,
		},
		Budget:    g.receiveBudget(),
		OnRefused: g.metrics.Bounds.MCPRefused,
		Server: mcpserver.Options{
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
			Linger:        mcpserver.Linger(g.cfg.SessionIdle),
			OnToolCall:    g.metrics.ToolCall,
			CallTimeout:   g.cfg.MCPCallTimeout,
			DialogWait:    mcpserver.DialogWait(g.cfg.MCPDialogWait),
			ImageMaxBytes: g.cfg.MCPImageMaxBytes,
			ImageMaxSide:  g.cfg.MCPImageMaxSide,
			Version:       mcpserver.Version(g.cfg.Version),
			Logger:        g.log,
		},
	})
}

// mcpBackend connects the MCP tools to the guard as an in-process agent.
type mcpBackend struct{ g *Guard }

// Open relays the pipe as one agent of user, exactly as serveAgent relays a
// WebSocket: same interceptor (firewall, isolation), same event filter,
// same registration for dialogs and blocked-request events.
func (b mcpBackend) Open(ctx context.Context, key string, p *mcpserver.Pipe) (<-chan struct{}, error) {
	g := b.g
	// The model answers a dialog in its next turn: this agent's dialogs
	// wait --mcp-dialog-wait for browser_handle_dialog, not --dialog-grace.
	wait := func(a *relay.Agent) { g.dialogs.SetOwnerGrace(a, mcpserver.DialogWait(g.cfg.MCPDialogWait)) }
	ended, err := g.agents.Pipe(ctx, p.AgentSide(), admission.Spec{Name: "mcp", Key: key}, wait, func(err error) error {
		if errors.Is(err, mcpserver.ErrClosed) {
			return nil
		}
		return err
	})
	if errors.Is(err, admission.ErrNotReady) {
		return nil, errors.New("cdpguard: not ready (the browser is starting or restarting); try again shortly")
	}
	if err != nil {
		return nil, fmt.Errorf("cdpguard: %w", err)
	}
	return ended, nil
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
