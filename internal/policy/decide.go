package policy

import (
	"strconv"
	"strings"
)

// Decision is the verdict on one URL or host. The zero Decision denies.
type Decision struct {
	Allowed bool
	// Reason is always set: short and human, e.g. `allowed by "*.example.com"`,
	// `blocked by "ads.example.com"`, `host "evil.test" is not in the
	// allowlist`, `scheme "file" is never allowed`, `malformed URL`.
	Reason string
	// Rule is the canonical entry that decided, if one did.
	Rule string
	// Host is the normalised host judged (IPv6 without brackets); "" for
	// schemes without a network host and for malformed input.
	Host string
}

// Fixed reasons, so the common verdicts allocate nothing.
const (
	reasonEmpty     = "empty allowlist blocks everything"
	reasonMalformed = "malformed URL"
	reasonAbout     = `scheme "about" does not touch the network`
	reasonData      = `scheme "data" does not touch the network`
	reasonBlob      = `scheme "blob" does not touch the network`
)

// Decide judges a full URL as a browser request or an agent names it. The
// URL is split as the WHATWG parser splits it, so the host judged is the host
// the browser would contact. It allocates nothing for a well-formed URL with
// a lower-case host that is allowed.
func (p *Policy) Decide(rawURL string) Decision {
	return p.decide(rawURL, false)
}

func (p *Policy) decide(s string, cleaned bool) Decision {
	scheme, rest, st := splitScheme(s)
	if st == splitDirty && !cleaned {
		return p.decide(cleanURL(s), true)
	}
	if st != splitOK {
		return Decision{Reason: reasonMalformed}
	}
	kind := classifyScheme(scheme)
	switch kind {
	case schemeAbout:
		return Decision{Allowed: true, Reason: reasonAbout}
	case schemeData:
		return Decision{Allowed: true, Reason: reasonData}
	case schemeBlob:
		return Decision{Allowed: true, Reason: reasonBlob}
	case schemeOther:
		return Decision{Reason: "scheme " + strconv.Quote(strings.ToLower(scheme)) + " is never allowed"}
	}
	rawHost, port, st := splitAuthority(rest)
	if st == splitDirty && !cleaned {
		return p.decide(cleanURL(s), true)
	}
	if st != splitOK {
		return Decision{Reason: reasonMalformed}
	}
	host, why := normalizeHost(rawHost)
	if why != "" {
		return Decision{Reason: reasonMalformed + ": " + why}
	}
	if port < 0 {
		port = defaultPort(kind)
	}
	return p.judge(host, kind, port)
}

// DecideHost judges a host and port whose scheme is unknown, as the egress
// proxy sees them (CONNECT host:port, or the Host of a plain HTTP request).
// The host may be bracketed IPv6. It is allowed if some allow entry covers
// the host and port for any network scheme, and blocked if any block entry
// does: the proxy cannot see inside a tunnel, so both sides err on denial.
func (p *Policy) DecideHost(host string, port int) Decision {
	if port < 1 || port > 65535 {
		return Decision{Reason: "invalid port " + strconv.Itoa(port)}
	}
	h, why := normalizeHost(host)
	if why != "" {
		return Decision{Reason: "invalid host: " + why}
	}
	return p.judge(h, schemeNetwork, port)
}

// judge applies the blocklist, then the allowlist, to a canonical host.
func (p *Policy) judge(host string, kinds schemeKind, port int) Decision {
	if p == nil {
		return Decision{Reason: reasonEmpty, Host: host}
	}
	if b := p.block; b != nil {
		if r, _ := b.rules.match(host, kinds, port); r != nil {
			return Decision{Reason: r.reason, Rule: r.text, Host: host}
		}
		if b.all {
			return Decision{Reason: b.allRule.reason, Rule: b.allRule.text, Host: host}
		}
	}
	a := p.allow
	if a.len() == 0 {
		return Decision{Reason: reasonEmpty, Host: host}
	}
	// Specific entries before "*", so Rule names the most precise reason.
	r, covered := a.rules.match(host, kinds, port)
	if r != nil {
		return Decision{Allowed: true, Reason: r.reason, Rule: r.text, Host: host}
	}
	if a.all {
		return Decision{Allowed: true, Reason: a.allRule.reason, Rule: a.allRule.text, Host: host}
	}
	if covered {
		what := "port " + strconv.Itoa(port)
		if kinds != schemeNetwork {
			what = schemeName(kinds) + " on " + what
		}
		return Decision{Reason: what + " is not allowed for host " + strconv.Quote(host), Host: host}
	}
	return Decision{Reason: "host " + strconv.Quote(host) + " is not in the allowlist", Host: host}
}

func schemeName(k schemeKind) string {
	switch k {
	case schemeHTTP:
		return "http"
	case schemeHTTPS:
		return "https"
	case schemeWS:
		return "ws"
	case schemeWSS:
		return "wss"
	}
	return "network"
}
