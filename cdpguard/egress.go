package cdpguard

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/scopes"
)

// startProxy starts the egress proxy on a loopback port. Chrome sends every
// HTTP(S) and WebSocket connection through it, so channels the Fetch domain
// never sees (WebSocket handshakes, preconnects) are judged by host too.
func (g *Guard) startProxy() error {
	private, bad := egress.ParsePrivate(g.cfg.AllowPrivate)
	if bad != "" {
		return configError("AllowPrivate", bad, "not a CIDR range or address")
	}
	p, err := egress.New(egress.Options{
		Decide:       g.scopes.Decider(g.scopes.Default()), // the shared listener: Chrome's default context
		HostMap:      g.hosts,
		AllowPrivate: private,
		AllowAddrs:   g.pol.AllowAddrs(scopes.DefaultKey), // the default group's IP entries, as in force
		Logger:       g.log,
		OnRefuse:     g.onRefuse,
		Self:         g.ep.self,
	})
	if err != nil {
		return fmt.Errorf("%w: egress proxy: %w", ErrSetup, err)
	}
	addr := g.cfg.EgressListen
	if addr == "" {
		addr = "127.0.0.1:0"
	} else if err := checkEgressListen(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: egress proxy listen: %w", ErrSetup, err)
	}
	g.proxy = p
	g.proxyAddr = ln.Addr().String()
	g.proxyURL = "http://" + g.proxyAddr
	g.wg.Add(1)
	go func() { // the proxy: ends at Close
		defer g.wg.Done()
		if err := p.Serve(ln); err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, egress.ErrClosed) {
			g.log.Error("egress proxy stopped", "err", err)
		}
	}()
	return nil
}

// onRefuse counts and logs a proxy refusal. The proxy sees connections,
// not tabs; a refusal on a user's own listener (grants.go) is that user's,
// and the user's agents are told. Refusals on the shared listener are only
// logged (telling every user would show them each other's hosts).
func (g *Guard) onRefuse(r egress.Refusal) {
	g.metrics.ProxyRefused.Inc()
	g.logProxyRefusal(r)
	if sc := scopes.FromTag(r.Tag); sc != nil {
		g.notifyBlock(sc.Key(), fetchdomain.Block{URL: net.JoinHostPort(r.Host, strconv.Itoa(r.Port)), Reason: r.Reason, ResourceType: "Connection"})
	}
}

// checkEgressListen accepts only loopback addresses for --egress-listen: a
// proxy to the allowed hosts must not be open to the network.
func checkEgressListen(addr string) error {
	if why := egress.ListenRefusal(addr); why != "" {
		return configError("EgressListen", addr, why)
	}
	return nil
}
