package cdpguard

import (
	"net/netip"
	"strings"

	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/selfaddr"
)

// isSelfHost reports whether host (normalised, as policy.Decision has it)
// and port are the guard itself: an IP literal, a --host-map name or a
// localhost name that lands on one of the guard's listeners, on any of the
// host's addresses when a listener is on 0.0.0.0 or [::] (selfaddr). Names
// resolved by DNS are left to the egress proxy, which resolves them once
// and checks every answer against the same set.
func (g *Guard) isSelfHost(host string, port int) bool {
	if port < 1 || port > 65535 {
		return false
	}
	p := uint16(port)
	if !g.ep.self.HasPort(p) { // every request judged gets here: skip the host map
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return g.ep.self.Contains(netip.AddrPortFrom(a, p))
	}
	if a, ok := g.hosts.Lookup(host); ok {
		return g.ep.self.Contains(netip.AddrPortFrom(a, p))
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") { // Chrome resolves these to loopback itself
		return g.ep.self.Contains(netip.AddrPortFrom(netip.IPv4Unspecified(), p)) ||
			g.ep.self.Contains(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), p)) ||
			g.ep.self.Contains(netip.AddrPortFrom(netip.IPv6Loopback(), p))
	}
	return false
}

// refuseSelf turns an allowed decision for a URL addressed to the guard
// itself into a refusal: agents' URL checks (the firewall's CheckURL rows,
// the MCP tools, Guard.read) say so before the Fetch judge would.
func (g *Guard) refuseSelf(d policy.Decision, url string) policy.Decision {
	if !d.Allowed || d.Host == "" {
		return d
	}
	if port, ok := selfaddr.URLPort(url); ok && g.isSelfHost(d.Host, port) {
		return policy.Decision{Reason: fetchdomain.ReasonSelf, Host: d.Host}
	}
	return d
}
