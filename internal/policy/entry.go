package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrInvalidEntry is wrapped by every [EntryError], so startup code can tell
// a configuration mistake from other failures.
var ErrInvalidEntry = errors.New("invalid policy entry")

// EntryError names an allowlist or blocklist entry that does not parse and
// why, so the operator can fix the configuration; startup stops on it.
type EntryError struct {
	Entry  string // the entry as written, trimmed
	List   string // "allow" or "block"
	Reason string // short, human
}

// Error formats as: invalid allow entry "exa mple.com/path": paths are not allowed.
func (e *EntryError) Error() string {
	return fmt.Sprintf("invalid %s entry %q: %s", e.List, e.Entry, e.Reason)
}

// Unwrap returns [ErrInvalidEntry].
func (e *EntryError) Unwrap() error { return ErrInvalidEntry }

// entry is one parsed policy entry.
type entry struct {
	text     string     // canonical form, as Origins and Blocked show it
	all      bool       // the lone "*"
	host     string     // canonical host; for a wildcard the suffix after "*."
	wildcard bool       // "*.host": strict subdomains only
	mask     schemeKind // network schemes the entry covers
	port     int        // 0: any port
	ip       netip.Addr // valid when host is an IP literal
}

// isNonNetworkScheme names schemes people may paste into an allowlist that
// can never be allowed; naming them gives a clearer error than "invalid port".
func isNonNetworkScheme(s string) bool {
	switch s {
	case "about", "data", "blob", "file", "filesystem", "chrome", "chrome-extension",
		"chrome-untrusted", "devtools", "view-source", "javascript", "ftp", "mailto", "tel":
		return true
	}
	return false
}

// splitEntries splits one configuration value on ';', ',' and new lines,
// trims spaces and drops empty entries.
func splitEntries(v string) []string {
	parts := strings.FieldsFunc(v, func(r rune) bool {
		return r == ';' || r == ',' || r == '\n' || r == '\r'
	})
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseEntry validates and canonicalises one trimmed entry; the reason is ""
// when it is valid. Structure (scheme, path, query, userinfo) is checked
// before the host, so the reason names the most obvious mistake.
func parseEntry(e string) (entry, string) {
	if e == "*" {
		return entry{text: "*", all: true, mask: schemeNetwork}, ""
	}
	scheme, rest := "", e
	if i := strings.Index(e, "://"); i >= 0 {
		scheme = strings.ToLower(e[:i])
		rest = e[i+3:]
		if scheme == "" {
			return entry{}, `missing scheme before "://"`
		}
		if classifyScheme(scheme)&schemeNetwork == 0 {
			return entry{}, fmt.Sprintf("unknown scheme %q (only http, https, ws and wss)", scheme)
		}
	} else if i := strings.IndexByte(e, ':'); i > 0 {
		before := strings.ToLower(e[:i])
		if classifyScheme(before)&schemeNetwork != 0 {
			return entry{}, fmt.Sprintf(`missing "//" after scheme %q`, before)
		}
		if isNonNetworkScheme(before) {
			return entry{}, fmt.Sprintf("scheme %q can never be allowed (only http, https, ws and wss)", before)
		}
	}
	if j := strings.IndexAny(rest, "/?#\\"); j >= 0 {
		switch rest[j] {
		case '/':
			if rest[j:] != "/" {
				return entry{}, "paths are not allowed"
			}
			rest = rest[:j]
		case '?':
			return entry{}, "queries are not allowed"
		case '#':
			return entry{}, "fragments are not allowed"
		default:
			return entry{}, "backslashes are not allowed"
		}
	}
	if strings.IndexByte(rest, '@') >= 0 {
		return entry{}, "userinfo is not allowed"
	}
	host, portText, hasPort, reason := splitEntryHostPort(rest)
	if reason != "" {
		return entry{}, reason
	}
	out := entry{mask: schemeNetwork}
	if scheme != "" {
		k := classifyScheme(scheme)
		out.mask = k
		switch k {
		case schemeHTTP, schemeWS:
			out.mask = schemeHTTP | schemeWS
		case schemeHTTPS, schemeWSS:
			out.mask = schemeHTTPS | schemeWSS
		}
		out.port = defaultPort(k)
	}
	if hasPort {
		p, reason := parseEntryPort(portText)
		if reason != "" {
			return entry{}, reason
		}
		out.port = p
	}
	if host == "*" {
		return entry{}, `"*" must stand alone (write * by itself to allow every host)`
	}
	if strings.HasPrefix(host, "*.") {
		out.wildcard = true
		host = host[2:]
	}
	if strings.IndexByte(host, '*') >= 0 {
		return entry{}, `wildcards are only allowed as a whole first label, as in "*.example.com"`
	}
	if strings.HasPrefix(host, ".") {
		return entry{}, `empty label in host (write "*.example.com" for subdomains)`
	}
	norm, reason := normalizeHost(host)
	if reason != "" {
		return entry{}, reason
	}
	out.host = norm
	if a, err := netip.ParseAddr(norm); err == nil {
		if out.wildcard {
			return entry{}, "wildcards cannot be combined with IP addresses"
		}
		out.ip = a
	}
	out.text = out.canonical(scheme)
	return out, ""
}

// splitEntryHostPort separates host and port text; IPv6 must be bracketed,
// since "::1:8080" could mean either an address or an address and a port.
func splitEntryHostPort(rest string) (host, port string, hasPort bool, reason string) {
	if strings.HasPrefix(rest, "[") {
		k := strings.IndexByte(rest, ']')
		if k < 0 {
			return "", "", false, "unterminated IPv6 literal"
		}
		host, after := rest[:k+1], rest[k+1:]
		if after == "" {
			return host, "", false, ""
		}
		if after[0] != ':' {
			return "", "", false, "unexpected text after IPv6 literal"
		}
		return host, after[1:], true, ""
	}
	if strings.Count(rest, ":") > 1 {
		if _, err := netip.ParseAddr(rest); err == nil {
			return "", "", false, `IPv6 addresses must be written in brackets, as in "[::1]"`
		}
		return "", "", false, "too many colons"
	}
	host, port, hasPort = strings.Cut(rest, ":")
	if host == "" {
		return "", "", false, "empty host"
	}
	return host, port, hasPort, ""
}

// parseEntryPort accepts "*" (any port) or a decimal port 1-65535.
func parseEntryPort(s string) (int, string) {
	if s == "" {
		return 0, "empty port"
	}
	if s == "*" {
		return 0, ""
	}
	if len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Sprintf("invalid port %q", s)
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, fmt.Sprintf("invalid port %q (want 1-65535)", s)
	}
	return p, ""
}

// canonical writes the entry back in the one form every equivalent spelling
// shares: lower-case scheme, normalised host, default port dropped, ":*"
// dropped where it adds nothing.
func (e entry) canonical(scheme string) string {
	var b strings.Builder
	if scheme != "" {
		b.WriteString(scheme)
		b.WriteString("://")
	}
	if e.wildcard {
		b.WriteString("*.")
	}
	b.WriteString(hostport(e.host))
	switch {
	case e.port == 0 && scheme != "":
		b.WriteString(":*")
	case e.port != 0 && (scheme == "" || e.port != defaultPort(classifyScheme(scheme))):
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.port))
	}
	return b.String()
}

// Validate checks one allow or block value (list is "allow" or "block";
// entries separated as [Parse] takes them) without compiling it, and
// returns how many entries it holds: the policy file checks each entry on
// its own line this way, and counts them against its bound. A bad entry
// is the [*EntryError] Parse would return.
func Validate(list, value string) (int, error) {
	n := 0
	for _, text := range splitEntries(value) {
		if _, reason := parseEntry(text); reason != "" {
			return 0, &EntryError{Entry: text, List: list, Reason: reason}
		}
		n++
	}
	return n, nil
}
