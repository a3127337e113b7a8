package egress

import (
	"net"
	"net/netip"
	"strings"
)

// ParsePrivate parses the ranges the proxy may dial although they are
// loopback, private or link-local (Options.AllowPrivate): CIDR ranges or
// addresses, several to a string separated by ',', ';', spaces or new
// lines. bad is the first entry that is neither, "" when all parse.
func ParsePrivate(list []string) (private []netip.Prefix, bad string) {
	for _, c := range list {
		for _, s := range strings.FieldsFunc(c, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\n' }) {
			pfx, err := netip.ParsePrefix(s)
			if err != nil {
				addr, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return nil, s
				}
				pfx = netip.PrefixFrom(addr, addr.BitLen())
			}
			private = append(private, pfx)
		}
	}
	return private, ""
}

// ListenRefusal returns why addr may not be the shared listener's address,
// or "": only loopback addresses, since a proxy to the allowed hosts must
// not be open to the network.
func ListenRefusal(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "want host:port"
	}
	if host == "localhost" {
		return ""
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.IsLoopback() {
		return "want a loopback address (127.0.0.1:PORT or [::1]:PORT): the proxy must not be open to the network"
	}
	return ""
}

// ChromeFlags are the launch flags that send all of a managed browser's
// traffic through the proxy listening on addr and keep the browser from
// resolving names itself. (The WebRTC and QUIC switches are among
// internal/browser's hardening flags.)
func ChromeFlags(addr string) []string {
	host, _, _ := net.SplitHostPort(addr)
	return []string{
		"--proxy-server=http://" + addr,
		"--proxy-bypass-list=<-loopback>",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE " + host,
	}
}
