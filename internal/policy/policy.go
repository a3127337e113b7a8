package policy

import (
	"net/netip"
	"slices"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// Policy is a compiled allowlist and blocklist. Build it with [Parse]; it is
// immutable afterwards and safe for concurrent use. A nil or zero Policy is
// empty: it denies every network URL.
type Policy struct {
	rules              matcher
	allowAll, blockAll bool
	allowAllRule       rule
	blockAllRule       rule
	origins, blocked   []string
	ips                []netip.Addr
}

// rule is one compiled entry as the matcher keeps it.
type rule struct {
	text   string     // canonical entry, reported as Decision.Rule
	reason string     // precomputed Decision.Reason, so deciding allocates nothing
	mask   schemeKind // network schemes covered
	port   int        // 0: any port
}

// matches reports whether the rule covers one of the schemes in kinds on port.
func (r *rule) matches(kinds schemeKind, port int) bool {
	return r.mask&kinds != 0 && (r.port == 0 || r.port == port)
}

// hostRules are the allow and block rules filed under one host key.
type hostRules struct {
	allow, block []rule
}

// lenSet is a bitset of key lengths; lengths of 255 and more share the last
// bit. It lets a lookup skip map probes for suffixes no key could equal.
type lenSet [4]uint64

func (s *lenSet) add(n int)      { n = min(n, 255); s[n>>6] |= 1 << (n & 63) }
func (s *lenSet) has(n int) bool { n = min(n, 255); return s[n>>6]&(1<<(n&63)) != 0 }

// matcher finds rules for a canonical host: exact hosts in one map, wildcard
// suffixes in another keyed by the text after "*.". Allow and block rules
// share the maps so one probe serves both lists, and length sets skip probes
// that cannot hit.
type matcher struct {
	exact, wild         map[string]*hostRules
	exactLens, wildLens lenSet
}

func (m *matcher) add(e entry, r rule, allow bool) {
	target, lens := &m.exact, &m.exactLens
	if e.wildcard {
		target, lens = &m.wild, &m.wildLens
	}
	if *target == nil {
		*target = make(map[string]*hostRules)
	}
	hr := (*target)[e.host]
	if hr == nil {
		hr = &hostRules{}
		(*target)[e.host] = hr
	}
	if allow {
		hr.allow = append(hr.allow, r)
	} else {
		hr.block = append(hr.block, r)
	}
	lens.add(len(e.host))
}

// verdict collects what a matcher walk found.
type verdict struct {
	allow, block *rule
	covered      bool // some allow rule names the host, whatever its scheme or port
}

// visit folds one key's rules into v: the first block and the first allow
// rule found win, and the walk goes exact host first, then wildcards from the
// longest suffix, so the most specific rule is reported.
func (v *verdict) visit(hr *hostRules, kinds schemeKind, port int) {
	if v.block == nil {
		for i := range hr.block {
			if hr.block[i].matches(kinds, port) {
				v.block = &hr.block[i]
				return
			}
		}
	}
	if len(hr.allow) > 0 {
		v.covered = true
	}
	if v.allow == nil {
		for i := range hr.allow {
			if hr.allow[i].matches(kinds, port) {
				v.allow = &hr.allow[i]
				break
			}
		}
	}
}

// match walks every key that could cover host; it stops early only on a
// block, since a shorter wildcard may still block what a longer one allows.
func (m *matcher) match(host string, kinds schemeKind, port int) verdict {
	var v verdict
	if m.exactLens.has(len(host)) {
		if hr, ok := m.exact[host]; ok {
			v.visit(hr, kinds, port)
		}
	}
	if len(m.wild) == 0 {
		return v
	}
	for i := 0; i < len(host) && v.block == nil; i++ {
		if host[i] != '.' || !m.wildLens.has(len(host)-i-1) {
			continue
		}
		if hr, ok := m.wild[host[i+1:]]; ok {
			v.visit(hr, kinds, port)
		}
	}
	return v
}

// Parse validates and compiles a policy. Each allow and block value may hold
// several entries separated by ';', ',' or new lines; spaces are trimmed and
// empty entries skipped. The first bad entry stops parsing with an
// [*EntryError] (wrapping [ErrInvalidEntry]). Duplicate entries (after
// canonicalisation) are kept once.
func Parse(allow, block []string) (*Policy, error) {
	p := &Policy{}
	lists := []struct {
		name   string
		values []string
	}{{"allow", allow}, {"block", block}}
	for _, l := range lists {
		seen := map[string]bool{}
		for _, v := range l.values {
			for _, text := range splitEntries(v) {
				e, reason := parseEntry(text)
				if reason != "" {
					return nil, &EntryError{Entry: text, List: l.name, Reason: reason}
				}
				if seen[e.text] {
					continue
				}
				seen[e.text] = true
				p.add(l.name == "allow", e)
			}
		}
	}
	return p, nil
}

func (p *Policy) add(allow bool, e entry) {
	if allow {
		r := rule{text: e.text, reason: "allowed by " + quote(e.text), mask: e.mask, port: e.port}
		p.origins = append(p.origins, e.text)
		switch {
		case e.all:
			p.allowAll, p.allowAllRule = true, r
		default:
			p.rules.add(e, r, true)
			if e.ip.IsValid() && !slices.Contains(p.ips, e.ip) {
				p.ips = append(p.ips, e.ip)
			}
		}
		return
	}
	r := rule{text: e.text, reason: "blocked by " + quote(e.text), mask: e.mask, port: e.port}
	p.blocked = append(p.blocked, e.text)
	if e.all {
		p.blockAll, p.blockAllRule = true, r
		return
	}
	p.rules.add(e, r, false)
}

// AllowAll reports whether the allowlist holds "*" (every host allowed unless
// blocked); callers log it loudly.
func (p *Policy) AllowAll() bool { return p != nil && p.allowAll }

// Empty reports whether the allowlist has no entries, so every network URL is
// denied; callers log a warning.
func (p *Policy) Empty() bool { return p == nil || len(p.origins) == 0 }

// Origins returns the allow entries in canonical form and input order, for
// the blocked-navigation page, GET /policy and the startup log.
func (p *Policy) Origins() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.origins)
}

// Blocked returns the block entries in canonical form and input order.
func (p *Policy) Blocked() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.blocked)
}

// IPEntries returns the addresses the allowlist names as IP literal entries,
// in input order without duplicates: the operator named them, so the egress
// proxy may dial them even when they are loopback or private.
func (p *Policy) IPEntries() []netip.Addr {
	if p == nil {
		return nil
	}
	return slices.Clone(p.ips)
}

// policyJSON is the wire form of GET /policy and Guard.getPolicy.
type policyJSON struct {
	Allowed  []string `json:"allowed"`
	Blocked  []string `json:"blocked"`
	AllowAll bool     `json:"allowAll"`
}

// MarshalJSON encodes {"allowed":[...],"blocked":[...],"allowAll":bool};
// empty lists are [] rather than null so clients need no special case.
func (p *Policy) MarshalJSON() ([]byte, error) {
	v := policyJSON{Allowed: []string{}, Blocked: []string{}}
	if p != nil {
		v.Allowed = append(v.Allowed, p.origins...)
		v.Blocked = append(v.Blocked, p.blocked...)
		v.AllowAll = p.allowAll
	}
	return jsonv2.Marshal(v)
}

// quote wraps an entry in double quotes for reasons; entries hold no quotes
// or control characters once canonical.
func quote(s string) string { return `"` + s + `"` }
