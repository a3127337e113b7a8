package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/net/idna"
)

// ErrInvalidHost is wrapped by every error of [NormalizeHost], so callers can
// tell a bad host from other failures.
var ErrInvalidHost = errors.New("invalid host")

// idnaProfile maps hosts the way the WHATWG URL standard's "domain to ASCII"
// does (UTS #46, non-transitional, CheckBidi and CheckJoiners on,
// CheckHyphens, UseSTD3ASCIIRules and VerifyDnsLength off), so cdpguard
// computes the same punycode host as the browser. A Profile is immutable.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.VerifyDNSLength(false),
)

// needsMapping is the reason checkDomain gives for input that is not yet
// lower-case ASCII; normalizeHost maps it and checks again.
const needsMapping = "\x00needs mapping"

const reasonNonCanonicalIPv4 = "non-canonical IPv4 address (octal, hex, integer and short forms are refused)"

// NormalizeHost returns the canonical form of a host as cdpguard compares it:
// lower case, IDNA mapped to punycode, percent-encoding decoded, one trailing
// dot removed, IPv4 in dotted-quad form, IPv6 compressed without brackets and
// IPv4-mapped IPv6 unmapped. Brackets around IPv6 are optional. Hosts a
// browser would read as a non-canonical IPv4 address (0x7f.1, 017700000001,
// 2130706433) are errors, so they are denied rather than interpreted. Errors
// wrap [ErrInvalidHost].
func NormalizeHost(h string) (string, error) {
	n, reason := normalizeHost(h)
	if reason != "" {
		return "", fmt.Errorf("%w %q: %s", ErrInvalidHost, h, reason)
	}
	return n, nil
}

// normalizeHost is NormalizeHost with the reason as a string ("" when valid),
// so the hot path allocates nothing for an already canonical host.
func normalizeHost(h string) (string, string) {
	if h == "" {
		return "", "empty host"
	}
	if h[0] == '[' {
		if len(h) < 2 || h[len(h)-1] != ']' {
			return "", "unterminated IPv6 literal"
		}
		return normalizeIPv6(h[1 : len(h)-1])
	}
	if strings.IndexByte(h, ':') >= 0 {
		return normalizeIPv6(h)
	}
	n, reason := checkDomain(h)
	if reason != needsMapping {
		return n, reason
	}
	s, reason := mapDomain(h)
	if reason != "" {
		return "", reason
	}
	n, reason = checkDomain(s)
	if reason == needsMapping {
		return "", "invalid character in host"
	}
	return n, reason
}

// mapDomain percent-decodes h and maps it to lower-case ASCII (IDNA when it
// has non-ASCII bytes). Only the slow path gets here.
func mapDomain(h string) (string, string) {
	s := h
	if strings.IndexByte(s, '%') >= 0 {
		var ok bool
		if s, ok = percentDecode(s); !ok {
			return "", "invalid percent-encoding in host"
		}
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			a, err := idnaProfile.ToASCII(s)
			if err != nil {
				return "", "invalid international domain name"
			}
			return a, ""
		}
	}
	return strings.ToLower(s), ""
}

// checkDomain validates a lower-case ASCII domain or IPv4 address without
// allocating: labels of [a-z0-9_-], no empty label, one trailing dot dropped,
// and a host whose last label is a number must be a canonical dotted quad (the
// WHATWG parser would read it as IPv4). It answers needsMapping for
// upper-case, non-ASCII or percent-encoded input.
func checkDomain(s string) (string, string) {
	if len(s) > 0 && s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	if s == "" {
		return "", "empty host"
	}
	// A mapping character anywhere wins over other faults, so a host and its
	// upper-case spelling get the same reason.
	bad := ""
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if i == start && bad == "" {
				bad = "empty label in host"
			}
			start = i + 1
			continue
		}
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case 'A' <= c && c <= 'Z', c >= 0x80, c == '%':
			return "", needsMapping
		default:
			if bad == "" {
				bad = fmt.Sprintf("invalid character %q in host", c)
			}
		}
	}
	if bad != "" {
		return "", bad
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	if endsInNumber(last) {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return "", reasonNonCanonicalIPv4
		}
	}
	return s, ""
}

// endsInNumber reports whether a last label makes the WHATWG host parser
// treat the whole host as IPv4: all decimal digits, or "0x" and hex digits.
func endsInNumber(l string) bool {
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// normalizeIPv6 parses an IPv6 literal without brackets and returns its
// canonical text; IPv4-mapped addresses become plain IPv4 so an entry or a
// block on 127.0.0.1 also covers [::ffff:127.0.0.1].
func normalizeIPv6(s string) (string, string) {
	if strings.IndexByte(s, '%') >= 0 {
		return "", "IPv6 zones and percent-encoding are not allowed"
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return "", "invalid IPv6 address"
	}
	return a.Unmap().String(), ""
}

// percentDecode decodes %XX escapes; a '%' without two hex digits fails, as it
// makes the WHATWG host parser fail.
func percentDecode(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", false
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		i += 2
	}
	return b.String(), true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// hostport formats a canonical host for display, bracketing IPv6.
func hostport(host string) string {
	if strings.IndexByte(host, ':') >= 0 {
		return "[" + host + "]"
	}
	return host
}
