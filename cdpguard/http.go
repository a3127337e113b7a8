package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/devtoolsjson"
	"github.com/cdpguard/cdpguard/internal/httpgate"
	"github.com/cdpguard/cdpguard/internal/routes"
	"github.com/cdpguard/cdpguard/internal/users"
	"github.com/cdpguard/cdpguard/internal/wsagent"
)

func (g *Guard) listen() error {
	if g.ep.supervisor != "" {
		return g.useEndpoint(g.ep.supervisor) // a Supervisor serves it
	}
	addr := g.cfg.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: listen on %s: %w", ErrSetup, addr, err)
	}
	g.ep.url = "http://" + ln.Addr().String()
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
		g.ep.self.Add(ap) // pages never reach the endpoint (the proxy and the Fetch judge share the set)
	}
	g.ep.srv = &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    httpgate.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return g.ctx },
	}
	g.wg.Add(1)
	go func() { // the endpoint: ends at Close (Shutdown)
		defer g.wg.Done()
		if err := g.ep.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("endpoint stopped", "err", err)
		}
	}()
	return nil
}

// ServeHTTP is the endpoint (internal/routes): Chrome's /json/* and
// /devtools/* surface plus the guard's own paths. A web page must not be
// able to drive the guard, so requests whose Host is not an IP literal,
// localhost or a --public-host are refused, and so are WebSocket upgrades
// that carry an Origin (gate). A session header over its cap is refused on
// every path, before anything keys a user by it (refuseHeader).
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.refuseHeader(w, r) {
		g.ep.routes.ServeHTTP(w, r)
	}
}

// newRoutes wires the endpoint's paths to the guard's handlers.
func (g *Guard) newRoutes() *routes.Table {
	return &routes.Table{
		Gate:  g.gate,
		Ready: g.ready.Load,
		Policy: func(w http.ResponseWriter, r *http.Request) {
			key, err := g.keyOf(r.Header)
			if err != nil {
				http.Error(w, "cdpguard: "+err.Error(), http.StatusForbidden)
				return
			}
			devtoolsjson.WriteJSON(w, g.policyViewFor(key, g.scopes.OfUser(g.users.Lookup(key))))
		},
		Read:    g.rd.ServeHTTP,
		Metrics: g.metrics.Handler,
		JSON:    g.ep.json,
		MCP:     g.mcp,
		Agent:   g.serveAgent,
	}
}

// gate is the endpoint's refusal of requests a web page could have made
// (internal/httpgate): the Host header, a page's headers, a connection
// the guard's own egress proxy dialled.
func (g *Guard) gate() httpgate.Gate {
	gate := httpgate.Gate{PublicHosts: g.cfg.PublicHosts}
	if p := g.proxy; p != nil {
		gate.Dialled = p.Dialled
	}
	return gate
}

// newDevtoolsJSON wires Chrome's /json/* surface (internal/devtoolsjson)
// to the guard: its browser, its users, their isolation and their policy.
func (g *Guard) newDevtoolsJSON() *devtoolsjson.Handler {
	return devtoolsjson.New(devtoolsjson.Deps{
		Browser:              muxCaller{g},
		Targets:              g.targets,
		About:                &g.about,
		BrowserID:            g.about.id,
		Guard:                policyUsers{g},
		Users:                g.users,
		Isolation:            g.iso,
		SessionHeader:        g.cfg.SessionHeader,
		RequireSessionHeader: g.cfg.RequireSessionHeader,
	})
}

// serveAgent upgrades to a WebSocket and relays it as one agent
// (internal/admission, the path every agent takes).
func (g *Guard) serveAgent(w http.ResponseWriter, r *http.Request, targetID string) {
	// ServeHTTP has already refused requests from web pages (gate).
	e, err := g.agents.Enter()
	if err != nil {
		http.Error(w, "cdpguard: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer e.End()
	key, ok := g.ep.json.UserKey(w, r)
	if !ok {
		return
	}
	if key == "" {
		g.log.Warn("agent without the "+g.cfg.SessionHeader+" header: it shares the fallback context", "remote", r.RemoteAddr)
	}
	if !g.holdAgent(w, r, e, key) {
		return // refused before the upgrade (a cap)
	}
	conn, err := wsagent.Accept(w, r, wsagent.Options{
		WriteTimeout: g.agentWriteTimeout(), OnStall: g.onAgentStall,
		User: key, Budget: g.receiveBudget(), ReceiveTimeout: g.cfg.AgentReceiveTimeout,
		OnCut: func(bound string) { g.onReceiveCut(r.RemoteAddr, key, bound) },
	})
	if err != nil {
		return // Accept has answered
	}
	err = e.Admit(g.ctx, conn, admission.Spec{Name: r.RemoteAddr, Key: key, TargetID: targetID}, func(u *users.User) string {
		if targetID != "" && !g.users.OwnsTarget(u, targetID) {
			return "cdpguard: no such target for this user"
		}
		if targetID == "" {
			return ""
		}
		return g.iso.NotWebRefusal("/devtools/page/", targetID)
	})
	var refused *admission.Refused
	switch {
	case errors.As(err, &refused):
		conn.Reject(wsagent.StatusPolicy, refused.Msg)
	case err != nil:
		g.log.Warn("agent connection refused", "remote", r.RemoteAddr, "err", err)
		conn.Reject(wsagent.StatusInternalError, "cdpguard: "+err.Error())
	default:
		_ = e.Serve(wsagent.Clean)
	}
}
