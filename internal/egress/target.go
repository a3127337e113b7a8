package egress

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// target is one host:port a client asked the proxy to reach, after
// normalisation. For an IP literal, addr is set and host is its canonical
// text form.
type target struct {
	host    string
	port    int
	addr    netip.Addr // valid only for IP literals
	literal bool
}

// String renders the target as host:port with IPv6 brackets, the form used
// in logs and refusal pages.
func (t target) String() string {
	return net.JoinHostPort(t.host, strconv.Itoa(t.port))
}

// parseAuthority reads "host:port" (CONNECT authority-form or a URL's host
// part) into a normalised target. defaultPort is used when the port is
// absent; 0 means a port is required. It returns a short reason on failure,
// suitable for a refusal page.
func parseAuthority(authority string, defaultPort int) (target, string) {
	if authority == "" {
		return target{}, "empty host"
	}
	host, portText, err := net.SplitHostPort(authority)
	if err != nil {
		if defaultPort == 0 {
			return target{}, "target has no port"
		}
		host, portText = authority, ""
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		} else if strings.Contains(host, ":") {
			return target{}, "malformed host"
		}
	}
	port := defaultPort
	if portText != "" {
		port, err = strconv.Atoi(portText)
		if err != nil || portText[0] == '+' || portText[0] == '-' {
			return target{}, "malformed port"
		}
	}
	if port < 1 || port > 65535 {
		return target{}, "port out of range"
	}
	return normaliseHost(host, port)
}

// normaliseHost applies the minimal normalisation the proxy needs before
// asking the policy: lower case, one trailing dot removed, IP literals in
// canonical form (IPv4-mapped IPv6 unmapped). Names are limited to the
// characters Chrome sends after IDNA conversion, so odd spellings cannot
// reach the resolver.
func normaliseHost(host string, port int) (target, string) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" {
		return target{}, "empty host"
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return target{}, "IPv6 zone not allowed"
		}
		addr = addr.Unmap()
		return target{host: addr.String(), port: port, addr: addr, literal: true}, ""
	}
	if len(host) > 253 {
		return target{}, "host name too long"
	}
	labels := strings.Split(host, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return target{}, "malformed host name"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return target{}, "malformed host name"
			}
		}
	}
	// A last label that is numeric (or hex) is an IPv4 spelling in some
	// resolvers (inet_aton accepts 0x7f.1 and 2130706433); refuse rather
	// than guess which address it means.
	last := labels[len(labels)-1]
	if isNumericLabel(last) {
		return target{}, "ambiguous numeric host name"
	}
	return target{host: host, port: port}, ""
}

func isNumericLabel(l string) bool {
	if strings.HasPrefix(l, "0x") {
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}
