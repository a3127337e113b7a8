package policy

import (
	"errors"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fuzzPolicies are the policies every fuzzed URL is judged against.
var fuzzPolicies = []string{"main", "block", "all", "empty", "schemes"}

// simpleURL matches URLs plain enough for net/url and a naive oracle to agree
// with the WHATWG reading.
var simpleURL = regexp.MustCompile(`^(?i)(https?|wss?)://([a-z0-9._-]+|\[[0-9a-f:.]+\])(:[0-9]{1,5})?([/?#][^\\\s@]*)?$`)

func FuzzDecide(f *testing.F) {
	for _, c := range decideCases {
		if !c.hostOnly {
			f.Add(c.url)
		}
	}
	policies := mustPolicies(f)
	f.Fuzz(func(t *testing.T, u string) {
		for _, name := range fuzzPolicies {
			checkDecide(t, policies[name], name, u)
		}
	})
}

func checkDecide(t *testing.T, p *Policy, name, u string) {
	d := p.Decide(u)
	if d.Reason == "" {
		t.Fatalf("%s: %q: empty reason", name, u)
	}
	if d.Host != "" {
		if n, err := NormalizeHost(d.Host); err != nil || n != d.Host {
			t.Fatalf("%s: %q: judged host %q is not canonical (%q, %v)", name, u, d.Host, n, err)
		}
	}
	if d.Allowed && d.Host == "" && !strings.HasSuffix(d.Reason, "does not touch the network") {
		t.Fatalf("%s: %q allowed without a host: %+v", name, u, d)
	}
	if d.Allowed && d.Host != "" {
		if !refCovered(p.Origins(), d.Host) {
			t.Fatalf("%s: %q allowed but host %q is not covered by %q: %+v", name, u, d.Host, p.Origins(), d)
		}
		if refCovered(plainEntries(p.Blocked()), d.Host) {
			t.Fatalf("%s: %q allowed but host %q is blocked: %+v", name, u, d.Host, d)
		}
	}
	// Upper-casing ASCII (scheme, host, everything) changes nothing.
	if up := asciiUpper(u); up != u {
		if d2 := p.Decide(up); d2 != d {
			t.Fatalf("%s: Decide(%q) = %+v but Decide(%q) = %+v", name, u, d, up, d2)
		}
	}
	// Plain URLs: an independent oracle built on net/url agrees.
	if m := simpleURL.FindStringSubmatch(u); m != nil {
		pu, err := url.Parse(u)
		if err != nil {
			return
		}
		scheme := strings.ToLower(m[1])
		host, ok := refHost(pu.Hostname())
		port := 80
		if scheme == "https" || scheme == "wss" {
			port = 443
		}
		if ps := pu.Port(); ps != "" {
			n, err := strconv.Atoi(ps)
			if err != nil || n < 1 || n > 65535 {
				ok = false
			}
			port = n
		}
		want := ok && refAllowed(p, scheme, host, port)
		if d.Allowed != want {
			t.Fatalf("%s: Decide(%q) = %+v; oracle says allowed=%v (host %q port %d)", name, u, d, want, host, port)
		}
		if want && d.Host != host {
			t.Fatalf("%s: Decide(%q) judged %q; oracle host %q", name, u, d.Host, host)
		}
		// The canonical rewrite of an allowed URL is allowed the same way.
		if want {
			canon := scheme + "://" + hostport(host) + ":" + strconv.Itoa(port) + "/"
			if d3 := p.Decide(canon); d3 != d {
				t.Fatalf("%s: Decide(%q) = %+v but canonical %q gives %+v", name, u, d, canon, d3)
			}
		}
	}
}

// refHost normalises a host from net/url the naive way; ok is false where
// the policy must refuse it.
func refHost(h string) (string, bool) {
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", false
		}
		return a.Unmap().String(), true
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" {
			return "", false
		}
	}
	if endsInNumber(labels[len(labels)-1]) || strings.Contains(h, ":") {
		return "", false // non-canonical IPv4 (canonical ones parsed above)
	}
	return h, true
}

// refEntry is an entry parsed naively from its canonical form.
type refEntry struct {
	all, wildcard bool
	scheme, host  string
	port          int // 0: any
}

func parseRefEntry(e string) refEntry {
	if e == "*" {
		return refEntry{all: true}
	}
	var r refEntry
	if s, rest, ok := strings.Cut(e, "://"); ok {
		r.scheme, e = s, rest
		r.port = 80
		if s == "https" || s == "wss" {
			r.port = 443
		}
	}
	if i := strings.LastIndexByte(e, ':'); i >= 0 && !strings.HasSuffix(e, "]") {
		if e[i+1:] == "*" {
			r.port = 0
		} else {
			r.port, _ = strconv.Atoi(e[i+1:])
		}
		e = e[:i]
	}
	e = strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")
	r.host, r.wildcard = strings.CutPrefix(e, "*.")
	return r
}

func (r refEntry) coversHost(h string) bool {
	if r.all {
		return true
	}
	if r.wildcard {
		return strings.HasSuffix(h, "."+r.host)
	}
	return h == r.host
}

func (r refEntry) covers(scheme, h string, port int) bool {
	if !r.coversHost(h) || (r.port != 0 && r.port != port) {
		return false
	}
	if r.all || r.scheme == "" {
		return true
	}
	tls := func(s string) bool { return s == "https" || s == "wss" }
	return tls(r.scheme) == tls(scheme)
}

func refCovered(entries []string, h string) bool {
	for _, e := range entries {
		if parseRefEntry(e).coversHost(h) {
			return true
		}
	}
	return false
}

// plainEntries keeps the block entries that name a host with no scheme or port.
func plainEntries(entries []string) []string {
	var out []string
	for _, e := range entries {
		if r := parseRefEntry(e); r.scheme == "" && r.port == 0 {
			out = append(out, e)
		}
	}
	return out
}

func refAllowed(p *Policy, scheme, h string, port int) bool {
	for _, e := range p.Blocked() {
		if parseRefEntry(e).covers(scheme, h, port) {
			return false
		}
	}
	for _, e := range p.Origins() {
		if parseRefEntry(e).covers(scheme, h, port) {
			return true
		}
	}
	return false
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func FuzzParse(f *testing.F) {
	for _, c := range entryCases {
		f.Add(c.entry, "")
	}
	for _, lists := range testPolicies {
		f.Add(lists[0], lists[1])
	}
	f.Fuzz(func(t *testing.T, allow, block string) {
		p, err := Parse([]string{allow}, []string{block})
		if err != nil {
			var ee *EntryError
			if !errors.As(err, &ee) || !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("Parse(%q, %q): %v is not an EntryError", allow, block, err)
			}
			src := map[string]string{"allow": allow, "block": block}[ee.List]
			if ee.Entry == "" || ee.Reason == "" || !strings.Contains(src, ee.Entry) {
				t.Fatalf("Parse(%q, %q): EntryError %+v does not name an entry of its list", allow, block, ee)
			}
			return
		}
		if _, err := p.MarshalJSON(); err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		q, err := Parse(p.Origins(), p.Blocked())
		if err != nil || !slices.Equal(q.Origins(), p.Origins()) || !slices.Equal(q.Blocked(), p.Blocked()) {
			t.Fatalf("canonical forms %q / %q do not reparse to themselves: %v", p.Origins(), p.Blocked(), err)
		}
		for _, o := range p.Origins() {
			r := parseRefEntry(o)
			if r.all {
				continue
			}
			scheme, port := r.scheme, r.port
			if scheme == "" {
				scheme = "https"
			}
			if port == 0 {
				port = 1234
			}
			host := r.host
			if r.wildcard {
				host = "sub." + host
			}
			u := scheme + "://" + hostport(host) + ":" + strconv.Itoa(port) + "/"
			d := p.Decide(u)
			if blocked := refAllowed(q, scheme, host, port) != d.Allowed; blocked {
				t.Fatalf("entry %q: Decide(%q) = %+v disagrees with oracle", o, u, d)
			}
			if len(p.Blocked()) == 0 && !d.Allowed {
				t.Fatalf("entry %q: Decide(%q) = %+v, want allowed", o, u, d)
			}
		}
	})
}
