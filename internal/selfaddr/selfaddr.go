// Package selfaddr knows which destinations are the guard itself: the
// addresses its listeners (the CDP endpoint, the egress proxy's listeners)
// accept connections on. A listener on an unspecified address (0.0.0.0,
// [::]) accepts on every address of every local interface, so for the
// egress proxy and the Fetch judge every such address on that port is the
// guard, not just loopback: a page must not reach the guard's own HTTP
// surface through a host address that policy happens to allow (an IP entry,
// --allow-private, a --host-map name). See
// docs/decisions/2026-12-02-self.md.
package selfaddr

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
)

// Set is the guard's listening addresses. The zero value is not usable;
// create one with New. It is safe for concurrent use.
type Set struct {
	mu  sync.Mutex
	eps []netip.AddrPort // a multiset: one entry per listener

	// local lists the prefixes of the host's interfaces and whether each
	// is on a loopback interface; tests replace it.
	local func() ([]Local, error)
}

// Local is one address of a local interface. On a loopback interface the
// whole prefix is local (Linux routes 127.0.0.0/8, and any prefix added to
// lo, to the host itself); elsewhere only the address is.
type Local struct {
	Prefix   netip.Prefix
	Loopback bool
}

// New returns an empty set that asks the operating system for the host's
// interface addresses when it needs them.
func New() *Set { return &Set{local: interfaceAddrs} }

// NewWithLocal returns an empty set that takes the host's interface
// addresses from local (for tests and for callers that know better).
func NewWithLocal(local func() ([]Local, error)) *Set { return &Set{local: local} }

// Add records a listening address. IPv4-mapped addresses are unmapped.
func (s *Set) Add(ap netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eps = append(s.eps, norm(ap))
}

// Remove forgets one entry for ap (a listener that closed).
func (s *Set) Remove(ap netip.AddrPort) {
	ap = norm(ap)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.eps {
		if e == ap {
			s.eps = append(s.eps[:i], s.eps[i+1:]...)
			return
		}
	}
}

// HasPort reports whether some listener is on port: a cheap first test
// for callers that must map a name to an address before Contains.
func (s *Set) HasPort(port uint16) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.eps {
		if e.Port() == port {
			return true
		}
	}
	return false
}

// Contains reports whether a connection to ap would reach one of the
// listeners: the same address and port; any address on the port of a
// listener on an unspecified address when the address is loopback or
// belongs to a local interface; and the unspecified address itself (a
// connection to 0.0.0.0 or [::] reaches the local host). When the
// interface addresses cannot be listed it answers true for a listener's
// port: failing closed costs a request to one port, not a leak.
func (s *Set) Contains(ap netip.AddrPort) bool {
	ap = norm(ap)
	a := ap.Addr()
	s.mu.Lock()
	wild := false
	for _, e := range s.eps {
		if e.Port() != ap.Port() {
			continue
		}
		if e.Addr() == a || a.IsUnspecified() {
			s.mu.Unlock()
			return true
		}
		if e.Addr().IsUnspecified() {
			wild = true
		}
	}
	s.mu.Unlock()
	if !wild {
		return false
	}
	if a.IsLoopback() {
		return true
	}
	// Listed at each check, not cached: addresses come and go (DHCP,
	// containers), and only a request to one of the guard's own ports
	// gets this far.
	local, err := s.local()
	if err != nil {
		return true
	}
	for _, l := range local {
		p := l.Prefix
		if !p.IsValid() {
			continue
		}
		p = netip.PrefixFrom(p.Addr().Unmap().WithZone(""), unmappedBits(p))
		if p.Addr() == a || (l.Loopback && p.Masked().Contains(a)) {
			return true
		}
	}
	return false
}

func norm(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
}

func unmappedBits(p netip.Prefix) int {
	if p.Addr().Is4In6() {
		return max(p.Bits()-96, 0)
	}
	return p.Bits()
}

// interfaceAddrs lists every address of every local interface, up or not
// (an address on a down interface can come up between two checks).
func interfaceAddrs() ([]Local, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []Local
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, err
		}
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok {
				continue
			}
			a, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			bits, _ := ipn.Mask.Size()
			a = a.Unmap()
			if a.Is4() && bits > 32 {
				bits -= 96
			}
			out = append(out, Local{Prefix: netip.PrefixFrom(a, bits), Loopback: ifc.Flags&net.FlagLoopback != 0})
		}
	}
	return out, nil
}

// URLPort returns the port of a network URL as a browser canonicalises it
// (Fetch.requestPaused's request.url): the explicit port, or the scheme's
// default (80 for http and ws, 443 for https and wss). ok is false for
// other schemes and for URLs whose port cannot be read.
func URLPort(rawURL string) (port int, ok bool) {
	i := strings.Index(rawURL, "://")
	if i <= 0 {
		return 0, false
	}
	def := 0
	switch strings.ToLower(rawURL[:i]) {
	case "http", "ws":
		def = 80
	case "https", "wss":
		def = 443
	default:
		return 0, false
	}
	auth := rawURL[i+3:]
	for j := 0; j < len(auth); j++ {
		if c := auth[j]; c == '/' || c == '?' || c == '#' || c == '\\' {
			auth = auth[:j]
			break
		}
	}
	for j := len(auth) - 1; j >= 0; j-- {
		if auth[j] == '@' {
			auth = auth[j+1:]
			break
		}
	}
	colon := -1
	for j := len(auth) - 1; j >= 0; j-- {
		if auth[j] == ']' {
			break
		}
		if auth[j] == ':' {
			colon = j
			break
		}
	}
	if colon < 0 || colon == len(auth)-1 {
		return def, true
	}
	digits := auth[colon+1:]
	n, err := strconv.Atoi(digits)
	if err != nil || digits[0] < '0' || digits[0] > '9' || n < 1 || n > 65535 {
		return 0, false
	}
	return n, true
}
