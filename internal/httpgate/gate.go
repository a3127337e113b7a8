// Package httpgate refuses the requests to the guard's HTTP endpoint that
// a web page could have made: a Host header that is not an IP literal,
// localhost or a --public-host name (DNS rebinding), the headers browsers
// add to a page's requests (Origin, Sec-Fetch-Site), and a request that
// came over a connection the guard's own egress proxy dialled (a page
// reached the endpoint by a route the self-address set does not know).
// See docs/decisions/2026-12-02-self.md. It observes no CDP events.
package httpgate

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// MaxHeaderBytes bounds the header block of a request to the endpoint
// (the guard's http.Server and the Supervisor's); past it Go's server
// answers 431 and closes the connection. Go's default, 1 MiB, let a client
// hold a MiB per connection for the 10 s header deadline, whatever
// --session-header-max-bytes says: 300 connections stalled short of the
// end of a 1 MB header took the daemon from 23 MB to 571 MB (issue 32).
// Clients of the endpoint send a few kB.
const MaxHeaderBytes = 64 << 10

// Gate is the endpoint's check of where a request came from. The zero
// Gate accepts IP literals and localhost only, and knows no proxy.
type Gate struct {
	// PublicHosts are the Host names accepted besides IP literals and
	// localhost (--public-host).
	PublicHosts []string
	// Dialled, if set, reports whether the egress proxy dialled the
	// connection from peer to local.
	Dialled func(peer, local netip.AddrPort) bool
}

// Refuse answers 403 to a request a web page could have made and reports
// whether it did. The guard and the Supervisor in front of it (between
// browsers) both check first with it.
func (g Gate) Refuse(w http.ResponseWriter, r *http.Request) bool {
	if g.fromOwnProxy(r) {
		http.Error(w, "cdpguard: requests through the guard's own egress proxy are refused (a page reached the endpoint)", http.StatusForbidden)
		return true
	}
	if !g.HostAllowed(r.Host) {
		http.Error(w, "cdpguard: Host header "+r.Host+" is not accepted; use an IP address, localhost or a --public-host name", http.StatusForbidden)
		return true
	}
	if FromWebPage(r) {
		http.Error(w, "cdpguard: requests from web pages are refused (Origin or Sec-Fetch-Site header)", http.StatusForbidden)
		return true
	}
	return false
}

// fromOwnProxy reports whether r came over a connection the guard's egress
// proxy dialled.
func (g Gate) fromOwnProxy(r *http.Request) bool {
	if g.Dialled == nil {
		return false
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	la, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && g.Dialled(peer, la.AddrPort())
}

// FromWebPage reports whether r came from a web page rather than an agent.
// Browsers send Sec-Fetch-Site on every request to a potentially
// trustworthy origin such as 127.0.0.1 or localhost, and Origin on CORS and
// non-GET requests; CDP clients send neither. "none" (a URL a human typed
// into the address bar) stays allowed. A no-CORS GET from a page carries no
// Origin, so checking Origin alone let a page call /json/close.
func FromWebPage(r *http.Request) bool {
	if r.Header.Get("Origin") != "" {
		return true
	}
	s := r.Header.Get("Sec-Fetch-Site")
	return s != "" && s != "none"
}

// HostAllowed reports whether a Host header names the guard: an IP
// literal, localhost or one of PublicHosts (case and a trailing dot
// ignored).
func (g Gate) HostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "localhost" {
		return true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	for _, p := range g.PublicHosts {
		if strings.EqualFold(strings.TrimSuffix(p, "."), host) {
			return true
		}
	}
	return false
}
