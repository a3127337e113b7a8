package cdpguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/cdpguard/cdpguard/internal/egress"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/scopes"
)

// startProxy starts the egress proxy on a loopback port. Chrome sends every
// HTTP(S) and WebSocket connection through it, so channels the Fetch domain
// never sees (WebSocket handshakes, preconnects) are judged by host too.
func (g *Guard) startProxy() error {
	var private []netip.Prefix
	for _, c := range g.cfg.AllowPrivate {
		for _, s := range strings.FieldsFunc(c, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\n' }) {
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				addr, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return configError("AllowPrivate", s, "not a CIDR range or address")
				}
				pfx = netip.PrefixFrom(addr, addr.BitLen())
			}
			private = append(private, pfx)
		}
	}
	p, err := egress.New(egress.Options{
		Decide:       g.scopes.Decider(g.scopes.Default()), // the shared listener: Chrome's default context
		HostMap:      g.hosts,
		AllowPrivate: private,
		AllowAddrs:   g.allowAddrsOf(scopes.DefaultKey), // the default group's IP entries, as in force
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

// proxyFlags are the launch flags that send all of the managed browser's
// traffic through the proxy and keep it from resolving names itself. (The
// WebRTC and QUIC switches are among internal/browser's hardening flags.)
func (g *Guard) proxyFlags() []string {
	host, _, _ := net.SplitHostPort(g.proxyAddr)
	return []string{
		"--proxy-server=" + g.proxyURL,
		"--proxy-bypass-list=<-loopback>",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE " + host,
	}
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
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return configError("EgressListen", addr, "want host:port")
	}
	if host == "localhost" {
		return nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.IsLoopback() {
		return configError("EgressListen", addr, "want a loopback address (127.0.0.1:PORT or [::1]:PORT): the proxy must not be open to the network")
	}
	return nil
}
