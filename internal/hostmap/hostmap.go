// Package hostmap maps host name patterns to fixed addresses, for Chrome and for
// the egress proxy alike, so that test hosts and internal names resolve the
// same way on both sides of the guard.
package hostmap

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrInvalidRule is the sentinel wrapped by every RuleError.
var ErrInvalidRule = errors.New("invalid host map rule")

// RuleError names a --host-map entry that could not be parsed.
type RuleError struct {
	Rule   string
	Reason string
}

func (e *RuleError) Error() string {
	return fmt.Sprintf("invalid --host-map %q: %s", e.Rule, e.Reason)
}

func (e *RuleError) Unwrap() error { return ErrInvalidRule }

// Rule maps one pattern to one address. A pattern is an exact host name or
// "*.suffix" (any subdomain of suffix, not suffix itself), matching Chrome's
// host-resolver-rules MAP semantics for the forms we accept.
type Rule struct {
	Pattern string
	Addr    netip.Addr
}

// Map is an ordered list of rules; the first match wins. The zero Map maps
// nothing.
type Map struct {
	rules []Rule
}

// Parse reads entries of the form PATTERN=IP.
func Parse(entries []string) (*Map, error) {
	m := &Map{}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		pat, ip, ok := strings.Cut(e, "=")
		if !ok {
			return nil, &RuleError{Rule: e, Reason: "want PATTERN=IP"}
		}
		pat = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(pat)), ".")
		addr, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(ip), "[]"))
		if err != nil {
			return nil, &RuleError{Rule: e, Reason: "address is not an IP literal"}
		}
		body := strings.TrimPrefix(pat, "*.")
		if body == "" || strings.ContainsAny(body, "*/:,= ") || strings.Contains(body, "..") {
			return nil, &RuleError{Rule: e, Reason: "pattern must be a host name or *.suffix"}
		}
		m.rules = append(m.rules, Rule{Pattern: pat, Addr: addr.Unmap()})
	}
	return m, nil
}

// Lookup returns the address a normalised host name is mapped to.
func (m *Map) Lookup(host string) (netip.Addr, bool) {
	if m == nil {
		return netip.Addr{}, false
	}
	for _, r := range m.rules {
		if suffix, ok := strings.CutPrefix(r.Pattern, "*"); ok {
			if len(host) > len(suffix) && strings.HasSuffix(host, suffix) {
				return r.Addr, true
			}
			continue
		}
		if host == r.Pattern {
			return r.Addr, true
		}
	}
	return netip.Addr{}, false
}

// Rules returns a copy of the rules in order.
func (m *Map) Rules() []Rule {
	if m == nil {
		return nil
	}
	return append([]Rule(nil), m.rules...)
}

// ChromeRules renders the map as the value of Chrome's
// --host-resolver-rules flag. When closed is true every other name is made
// unresolvable (MAP * ~NOTFOUND) except the names in keep, which is how the
// managed browser is kept from resolving anything itself once the egress
// proxy does all resolution.
func (m *Map) ChromeRules(closed bool, keep ...string) string {
	var parts []string
	for _, r := range m.Rules() {
		addr := r.Addr.String()
		if r.Addr.Is6() {
			addr = "[" + addr + "]"
		}
		parts = append(parts, "MAP "+r.Pattern+" "+addr)
	}
	if closed {
		parts = append(parts, "MAP * ~NOTFOUND")
		for _, k := range keep {
			parts = append(parts, "EXCLUDE "+k)
		}
	}
	return strings.Join(parts, ", ")
}
