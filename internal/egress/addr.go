package egress

import (
	"net/netip"
)

// specialPrefixes are ranges that are never public destinations beyond those
// netip classifies for us (loopback, private, link-local, multicast,
// unspecified).
var specialPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible address"},
	{netip.MustParsePrefix("100::/64"), "discard-only address"},
	{netip.MustParsePrefix("fec0::/10"), "site-local address"},
}

// embeddingPrefixes are IPv6 ranges that carry an IPv4 address inside them
// (NAT64 and 6to4); the embedded address is checked too, so that
// 64:ff9b::7f00:1 is not a way to spell 127.0.0.1.
var (
	nat64Prefix      = netip.MustParsePrefix("64:ff9b::/96")
	nat64LocalPrefix = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFourPrefix  = netip.MustParsePrefix("2002::/16")
)

// classify returns why an address is not a public unicast destination, or
// "" when it is one. IPv4-mapped forms are judged as the IPv4 address.
func classify(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid address"
	case a.IsUnspecified():
		return "unspecified address"
	case a.IsLoopback():
		return "loopback address"
	case a.IsPrivate():
		return "private address"
	case a.IsLinkLocalUnicast():
		return "link-local address (includes cloud metadata)"
	case a.IsMulticast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast address"
	}
	if a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return "broadcast address"
	}
	for _, s := range specialPrefixes {
		if s.prefix.Contains(a) {
			return s.reason
		}
	}
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64Prefix.Contains(a), nat64LocalPrefix.Contains(a):
			if r := classify(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})); r != "" {
				return "NAT64 form of a " + r
			}
		case sixToFourPrefix.Contains(a):
			if r := classify(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})); r != "" {
				return "6to4 form of a " + r
			}
		}
	}
	return ""
}

// addrPermitted reports whether the proxy may dial a, and if not, why.
// Addresses from the operator's host map are always permitted: mapping a
// name is how the operator names an internal address.
func (p *Proxy) addrPermitted(a netip.Addr, fromHostMap bool, sc *scope) (bool, string) {
	a = a.Unmap()
	if fromHostMap {
		return true, ""
	}
	reason := classify(a)
	if reason == "" {
		return true, ""
	}
	for _, pfx := range p.allowPrivate {
		if pfx.Contains(a) {
			return true, ""
		}
	}
	allow := p.opts.AllowAddrs
	if sc != nil && sc.allowAddrs != nil {
		allow = sc.allowAddrs
	}
	if allow != nil && allow(a) {
		return true, ""
	}
	return false, reason
}
