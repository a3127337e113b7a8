package policy

import (
	"net/netip"
	"slices"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// Policy is a compiled allowlist and blocklist. Build it with [Parse], or
// with [Compose] from two compiled ones; it is immutable afterwards and
// safe for concurrent use. A nil or zero Policy is empty: it denies every
// network URL.
//
// The allowlist and the blocklist are compiled apart, so that a policy
// file's groups can share the top level's compiled list by reference
// (Compose) instead of each compiling a copy: memory then grows with the
// file, not with its groups times its entries.
type Policy struct {
	allow, block *list
}

// list is one compiled side of a policy, the allowlist or the blocklist.
// It is immutable, so Policies share it. A nil *list is empty.
type list struct {
	rules   matcher
	all     bool // the lone "*"
	allRule rule
	texts   []string     // canonical entries in input order
	ips     []netip.Addr // the allowlist's IP literal entries, without duplicates
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

// lenSet is a bitset of key lengths; lengths of 255 and more share the last
// bit. It lets a lookup skip map probes for suffixes no key could equal.
type lenSet [4]uint64

func (s *lenSet) add(n int)      { n = min(n, 255); s[n>>6] |= 1 << (n & 63) }
func (s *lenSet) has(n int) bool { n = min(n, 255); return s[n>>6]&(1<<(n&63)) != 0 }

// matcher finds one list's rules for a canonical host: exact hosts in one
// map, wildcard suffixes in another keyed by the text after "*.", and
// length sets that skip probes that cannot hit (a short blocklist makes
// its side's walk almost free).
type matcher struct {
	exact, wild         map[string][]rule
	exactLens, wildLens lenSet
}

func (m *matcher) add(e entry, r rule) {
	target, lens := &m.exact, &m.exactLens
	if e.wildcard {
		target, lens = &m.wild, &m.wildLens
	}
	if *target == nil {
		*target = make(map[string][]rule)
	}
	(*target)[e.host] = append((*target)[e.host], r)
	lens.add(len(e.host))
}

// match walks every key that could cover host, the exact host first, then
// wildcards from the longest suffix, so the most specific rule is
// reported; it returns the first rule that covers kinds and port, and
// whether some rule names the host at all, whatever its scheme or port.
func (m *matcher) match(host string, kinds schemeKind, port int) (found *rule, covered bool) {
	visit := func(rs []rule) *rule {
		covered = covered || len(rs) > 0
		for i := range rs {
			if rs[i].matches(kinds, port) {
				return &rs[i]
			}
		}
		return nil
	}
	if m.exactLens.has(len(host)) {
		if rs, ok := m.exact[host]; ok {
			if r := visit(rs); r != nil {
				return r, true
			}
		}
	}
	if len(m.wild) == 0 {
		return nil, covered
	}
	for i := 0; i < len(host); i++ {
		if host[i] != '.' || !m.wildLens.has(len(host)-i-1) {
			continue
		}
		if rs, ok := m.wild[host[i+1:]]; ok {
			if r := visit(rs); r != nil {
				return r, true
			}
		}
	}
	return nil, covered
}

// Parse validates and compiles a policy. Each allow and block value may hold
// several entries separated by ';', ',' or new lines; spaces are trimmed and
// empty entries skipped. The first bad entry stops parsing with an
// [*EntryError] (wrapping [ErrInvalidEntry]). Duplicate entries (after
// canonicalisation) are kept once.
func Parse(allow, block []string) (*Policy, error) {
	a, err := compileList("allow", allow)
	if err != nil {
		return nil, err
	}
	b, err := compileList("block", block)
	if err != nil {
		return nil, err
	}
	return &Policy{allow: a, block: b}, nil
}

// compileList compiles one side, name "allow" or "block".
func compileList(name string, values []string) (*list, error) {
	l := &list{}
	seen := map[string]bool{}
	verb := "allowed by "
	if name == "block" {
		verb = "blocked by "
	}
	for _, v := range values {
		for _, text := range splitEntries(v) {
			e, reason := parseEntry(text)
			if reason != "" {
				return nil, &EntryError{Entry: text, List: name, Reason: reason}
			}
			if seen[e.text] {
				continue
			}
			seen[e.text] = true
			r := rule{text: e.text, reason: verb + quote(e.text), mask: e.mask, port: e.port}
			l.texts = append(l.texts, e.text)
			switch {
			case e.all:
				l.all, l.allRule = true, r
			default:
				l.rules.add(e, r)
				if name == "allow" && e.ip.IsValid() && !slices.Contains(l.ips, e.ip) {
					l.ips = append(l.ips, e.ip)
				}
			}
		}
	}
	return l, nil
}

// Compose returns the policy with allowFrom's allowlist and blockFrom's
// blocklist, sharing both (nothing is copied): a policy file's group that
// leaves out allow or block takes the top level's this way. A nil argument
// gives an empty list.
func Compose(allowFrom, blockFrom *Policy) *Policy {
	p := &Policy{}
	if allowFrom != nil {
		p.allow = allowFrom.allow
	}
	if blockFrom != nil {
		p.block = blockFrom.block
	}
	return p
}

// Entries returns how many entries the policy holds, allow and block,
// after duplicates are dropped: what its compiled size grows with.
func (p *Policy) Entries() int {
	if p == nil {
		return 0
	}
	return p.allow.len() + p.block.len()
}

func (l *list) len() int {
	if l == nil {
		return 0
	}
	return len(l.texts)
}

// AllowAll reports whether the allowlist holds "*" (every host allowed unless
// blocked); callers log it loudly.
func (p *Policy) AllowAll() bool { return p != nil && p.allow != nil && p.allow.all }

// Empty reports whether the allowlist has no entries, so every network URL is
// denied; callers log a warning.
func (p *Policy) Empty() bool { return p == nil || p.allow.len() == 0 }

// Origins returns the allow entries in canonical form and input order, for
// the blocked-navigation page, GET /policy and the startup log.
func (p *Policy) Origins() []string {
	if p == nil || p.allow == nil {
		return nil
	}
	return slices.Clone(p.allow.texts)
}

// Blocked returns the block entries in canonical form and input order.
func (p *Policy) Blocked() []string {
	if p == nil || p.block == nil {
		return nil
	}
	return slices.Clone(p.block.texts)
}

// IPEntries returns the addresses the allowlist names as IP literal entries,
// in input order without duplicates: the operator named them, so the egress
// proxy may dial them even when they are loopback or private.
func (p *Policy) IPEntries() []netip.Addr {
	if p == nil || p.allow == nil {
		return nil
	}
	return slices.Clone(p.allow.ips)
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
		if p.allow != nil {
			v.Allowed = append(v.Allowed, p.allow.texts...)
		}
		if p.block != nil {
			v.Blocked = append(v.Blocked, p.block.texts...)
		}
		v.AllowAll = p.AllowAll()
	}
	return jsonv2.Marshal(v)
}

// quote wraps an entry in double quotes for reasons; entries hold no quotes
// or control characters once canonical.
func quote(s string) string { return `"` + s + `"` }
