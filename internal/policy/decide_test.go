package policy

import (
	"strings"
	"testing"
)

// Policies the decide table refers to by name.
var testPolicies = map[string][2]string{ // name: {allow, block}
	"main": {"example.com; *.wild.test; https://secure.test; http://anyport.test:*; port.test:8443;" +
		" 127.0.0.1; [::1]:8080; bücher.example; ws://sock.test; *.both.test, both.test", ""},
	"block":    {"example.com; *.example.com; *", "ads.example.com; *.tracker.test; http://plain.test"},
	"blockall": {"example.com", "*"},
	"empty":    {"", ""},
	"emptyblk": {"", "evil.test"},
	"all":      {"*", ""},
	"schemes":  {"example.com", "http://example.com"},
}

type decideCase struct {
	name   string
	policy string // key of testPolicies
	url    string // judged with Decide unless hostOnly
	host   string // judged with DecideHost(host, port) when hostOnly
	port   int

	hostOnly bool
	allowed  bool
	reason   string // exact; a trailing "*" means prefix
	rule     string
	judged   string // expected Decision.Host; "-" skips the check
}

// decideCases is the one table for Decide and DecideHost: every entry form
// and every URL trick the package claims to handle.
var decideCases = []decideCase{
	// Exact host, any port, four schemes.
	{name: "exact https", policy: "main", url: "https://example.com/", allowed: true, reason: `allowed by "example.com"`, rule: "example.com", judged: "example.com"},
	{name: "exact http other port", policy: "main", url: "http://example.com:8080/x", allowed: true, rule: "example.com", judged: "example.com"},
	{name: "exact ws", policy: "main", url: "ws://example.com/socket", allowed: true, rule: "example.com"},
	{name: "exact wss odd port", policy: "main", url: "wss://example.com:9/", allowed: true, rule: "example.com"},
	{name: "exact not subdomain", policy: "main", url: "https://sub.example.com/", reason: `host "sub.example.com" is not in the allowlist`, judged: "sub.example.com"},
	{name: "exact suffix attack", policy: "main", url: "https://example.com.evil.test/", reason: `host "example.com.evil.test" is not in the allowlist`},
	{name: "exact prefix attack", policy: "main", url: "https://notexample.com/", reason: `host "notexample.com" is not in the allowlist`},
	{name: "query not host", policy: "main", url: "https://evil.test/?u=https://example.com/", reason: `host "evil.test" is not in the allowlist`},
	// host:port.
	{name: "port entry https", policy: "main", url: "https://port.test:8443/", allowed: true, rule: "port.test:8443"},
	{name: "port entry http", policy: "main", url: "http://port.test:8443/", allowed: true, rule: "port.test:8443"},
	{name: "port entry other port", policy: "main", url: "https://port.test/", reason: `https on port 443 is not allowed for host "port.test"`, judged: "port.test"},
	// Origins.
	{name: "origin", policy: "main", url: "https://secure.test/login", allowed: true, reason: `allowed by "https://secure.test"`, rule: "https://secure.test"},
	{name: "origin explicit default port", policy: "main", url: "https://secure.test:443/", allowed: true},
	{name: "origin leading zero port", policy: "main", url: "https://secure.test:0443/", allowed: true},
	{name: "origin wss counterpart", policy: "main", url: "wss://secure.test/", allowed: true},
	{name: "origin not http", policy: "main", url: "http://secure.test/", reason: `http on port 80 is not allowed for host "secure.test"`},
	{name: "origin not other port", policy: "main", url: "https://secure.test:8443/", reason: `https on port 8443 is not allowed for host "secure.test"`},
	{name: "origin ws entry allows http", policy: "main", url: "http://sock.test/", allowed: true, rule: "ws://sock.test"},
	{name: "origin ws entry not https", policy: "main", url: "https://sock.test/", reason: `https on port 443 is not allowed for host "sock.test"`},
	{name: "any port origin", policy: "main", url: "http://anyport.test:1234/", allowed: true, rule: "http://anyport.test:*"},
	{name: "any port origin ws", policy: "main", url: "ws://anyport.test:5/", allowed: true},
	{name: "any port origin not https", policy: "main", url: "https://anyport.test/", reason: `https on port 443 is not allowed for host "anyport.test"`},
	// Wildcards.
	{name: "wildcard one level", policy: "main", url: "https://a.wild.test/", allowed: true, reason: `allowed by "*.wild.test"`, rule: "*.wild.test", judged: "a.wild.test"},
	{name: "wildcard deep", policy: "main", url: "https://a.b.c.wild.test/", allowed: true, rule: "*.wild.test"},
	{name: "wildcard not apex", policy: "main", url: "https://wild.test/", reason: `host "wild.test" is not in the allowlist`},
	{name: "wildcard label boundary", policy: "main", url: "https://xwild.test/", reason: `host "xwild.test" is not in the allowlist`},
	{name: "wildcard suffix attack", policy: "main", url: "https://a.wild.test.evil/", reason: `host "a.wild.test.evil" is not in the allowlist`},
	{name: "wildcard plus apex apex", policy: "main", url: "https://both.test/", allowed: true, rule: "both.test"},
	{name: "wildcard plus apex sub", policy: "main", url: "https://x.both.test/", allowed: true, rule: "*.both.test"},
	// IP literal entries.
	{name: "ipv4 entry", policy: "main", url: "http://127.0.0.1/", allowed: true, rule: "127.0.0.1", judged: "127.0.0.1"},
	{name: "ipv4 entry any port", policy: "main", url: "http://127.0.0.1:9222/json", allowed: true},
	{name: "ipv4 trailing dot", policy: "main", url: "http://127.0.0.1./", allowed: true, judged: "127.0.0.1"},
	{name: "ipv4 other address", policy: "main", url: "http://127.0.0.2/", reason: `host "127.0.0.2" is not in the allowlist`},
	{name: "ipv6 entry", policy: "main", url: "http://[::1]:8080/", allowed: true, rule: "[::1]:8080", judged: "::1"},
	{name: "ipv6 long form", policy: "main", url: "http://[0:0:0:0:0:0:0:1]:8080/", allowed: true, judged: "::1"},
	{name: "ipv6 wrong port", policy: "main", url: "http://[::1]/", reason: `http on port 80 is not allowed for host "::1"`},
	{name: "ipv4-mapped ipv6", policy: "main", url: "http://[::ffff:127.0.0.1]/", allowed: true, rule: "127.0.0.1", judged: "127.0.0.1"},
	{name: "ipv4-mapped ipv6 hex", policy: "main", url: "http://[::ffff:7f00:1]/", allowed: true, judged: "127.0.0.1"},
	{name: "ipv6 zone", policy: "main", url: "http://[fe80::1%25eth0]/", reason: "malformed URL*"},
	{name: "ipv6 unterminated", policy: "main", url: "http://[::1/", reason: "malformed URL*"},
	{name: "ipv4 in brackets", policy: "main", url: "http://[127.0.0.1]/", reason: "malformed URL*"},
	// IPv4 tricks are refused, not interpreted, even under "*".
	{name: "hex ipv4", policy: "main", url: "http://0x7f.1/", reason: "malformed URL: non-canonical IPv4*"},
	{name: "hex ipv4 whole", policy: "main", url: "http://0x7f000001/", reason: "malformed URL*"},
	{name: "octal ipv4", policy: "main", url: "http://017700000001/", reason: "malformed URL*"},
	{name: "octal dotted ipv4", policy: "main", url: "http://0177.0.0.1/", reason: "malformed URL*"},
	{name: "decimal ipv4", policy: "main", url: "http://2130706433/", reason: "malformed URL*"},
	{name: "short ipv4", policy: "main", url: "http://127.1/", reason: "malformed URL*"},
	{name: "leading zero ipv4", policy: "main", url: "http://127.0.0.01/", reason: "malformed URL*"},
	{name: "numeric last label", policy: "main", url: "http://example.123/", reason: "malformed URL*"},
	{name: "hex ipv4 under allow all", policy: "all", url: "http://0x7f.1/", reason: "malformed URL*"},
	{name: "decimal ipv4 under allow all", policy: "all", url: "http://2130706433/", reason: "malformed URL*"},
	{name: "fullwidth digits ipv4", policy: "main", url: "http://１２７.０.０.１/", allowed: true, judged: "127.0.0.1"},
	{name: "fullwidth hex ipv4", policy: "all", url: "http://０x7f.1/", reason: "malformed URL*"},
	// Userinfo is ignored; the last '@' of the authority counts.
	{name: "userinfo names allowed", policy: "main", url: "http://example.com@evil.test/", reason: `host "evil.test" is not in the allowlist`, judged: "evil.test"},
	{name: "userinfo on allowed", policy: "main", url: "http://evil.test@example.com/", allowed: true, judged: "example.com"},
	{name: "userinfo with port", policy: "main", url: "http://example.com:80@evil.test/", reason: `host "evil.test" is not in the allowlist`},
	{name: "two at signs", policy: "main", url: "http://a@evil.test@example.com/", allowed: true, judged: "example.com"},
	{name: "at in path", policy: "main", url: "http://evil.test/@example.com", reason: `host "evil.test" is not in the allowlist`},
	{name: "at in query", policy: "main", url: "http://evil.test?@example.com", reason: `host "evil.test" is not in the allowlist`},
	{name: "at in fragment", policy: "main", url: "http://evil.test#@example.com", reason: `host "evil.test" is not in the allowlist`},
	{name: "at after backslash", policy: "main", url: `http://evil.test\@example.com`, reason: `host "evil.test" is not in the allowlist`},
	{name: "empty host after userinfo", policy: "main", url: "http://example.com@/", reason: reasonMalformed},
	// Ports.
	{name: "empty port", policy: "main", url: "https://secure.test:/", allowed: true},
	{name: "port too big", policy: "main", url: "http://example.com:65536/", reason: reasonMalformed},
	{name: "port zero", policy: "main", url: "http://example.com:0/", reason: reasonMalformed},
	{name: "port letters", policy: "main", url: "http://example.com:8a/", reason: reasonMalformed},
	{name: "two ports", policy: "main", url: "http://example.com:80:80/", reason: reasonMalformed},
	// Case, trailing dots, IDNA, percent-encoding.
	{name: "scheme upper", policy: "main", url: "HTTPS://example.com/", allowed: true},
	{name: "scheme mixed", policy: "main", url: "HtTp://example.com/", allowed: true},
	{name: "host upper", policy: "main", url: "https://EXAMPLE.COM/", allowed: true, judged: "example.com"},
	{name: "wildcard host upper", policy: "main", url: "https://A.Wild.TEST/", allowed: true, judged: "a.wild.test"},
	{name: "trailing dot", policy: "main", url: "https://example.com./", allowed: true, judged: "example.com"},
	{name: "two trailing dots", policy: "main", url: "https://example.com../", reason: "malformed URL*"},
	{name: "empty label", policy: "main", url: "https://example..com/", reason: "malformed URL*"},
	{name: "idna unicode", policy: "main", url: "https://bücher.example/", allowed: true, judged: "xn--bcher-kva.example"},
	{name: "idna unicode upper", policy: "main", url: "https://BÜCHER.example/", allowed: true, judged: "xn--bcher-kva.example"},
	{name: "idna punycode", policy: "main", url: "https://xn--bcher-kva.example/", allowed: true},
	{name: "idna fullwidth", policy: "main", url: "https://ｅｘａｍｐｌｅ.com/", allowed: true, judged: "example.com"},
	{name: "idna ideographic dot", policy: "main", url: "https://example。com/", allowed: true, judged: "example.com"},
	{name: "idna invalid", policy: "main", url: "https://a\u200d.example/", reason: "malformed URL*"},
	{name: "percent host", policy: "main", url: "https://%65xample.com/", allowed: true, judged: "example.com"},
	{name: "percent dot", policy: "main", url: "https://evil%2etest/", reason: `host "evil.test" is not in the allowlist`},
	{name: "percent ipv4", policy: "main", url: "http://%31%32%37.0.0.1/", allowed: true, judged: "127.0.0.1"},
	{name: "percent utf8", policy: "main", url: "https://b%C3%BCcher.example/", allowed: true, judged: "xn--bcher-kva.example"},
	{name: "percent bad", policy: "main", url: "https://exa%zzmple.com/", reason: "malformed URL*"},
	{name: "percent colon", policy: "main", url: "http://%3a%3a1/", reason: "malformed URL*"},
	{name: "percent slash", policy: "main", url: "http://example.com%2fevil.test/", reason: "malformed URL*"},
	// WHATWG splitting quirks.
	{name: "no slashes", policy: "main", url: "http:example.com", allowed: true, judged: "example.com"},
	{name: "no slashes deny", policy: "main", url: "http:evil.test", reason: `host "evil.test" is not in the allowlist`},
	{name: "backslashes", policy: "main", url: `https:\\example.com\path`, allowed: true},
	{name: "mixed slashes deny", policy: "main", url: `http:/\evil.test/`, reason: `host "evil.test" is not in the allowlist`},
	{name: "many slashes", policy: "main", url: "https:////example.com/", allowed: true},
	{name: "surrounding spaces", policy: "main", url: "  https://example.com  ", allowed: true},
	{name: "leading control", policy: "main", url: "\x00\x1fhttps://example.com", allowed: true},
	{name: "trailing control", policy: "main", url: "https://example.com\x01", allowed: true},
	{name: "tab in scheme", policy: "main", url: "ht\ttps://example.com/", allowed: true},
	{name: "newline in host", policy: "main", url: "https://exa\nmple.com/", allowed: true, judged: "example.com"},
	{name: "newline in host deny", policy: "main", url: "https://evil.te\r\nst/", reason: `host "evil.test" is not in the allowlist`},
	{name: "space in host", policy: "main", url: "https://exa mple.com/", reason: "malformed URL*"},
	{name: "nul in host", policy: "main", url: "https://example.com\x00.evil.test/", reason: "malformed URL*"},
	// Schemes without network access, and schemes never allowed.
	{name: "about", policy: "main", url: "about:blank", allowed: true, reason: reasonAbout, judged: ""},
	{name: "about upper", policy: "empty", url: "ABOUT:srcdoc", allowed: true},
	{name: "data", policy: "main", url: "data:text/html,<h1>hi", allowed: true, reason: reasonData},
	{name: "blob", policy: "main", url: "blob:https://evil.test/0b8e", allowed: true, reason: reasonBlob, judged: ""},
	{name: "file", policy: "all", url: "file:///etc/passwd", reason: `scheme "file" is never allowed`},
	{name: "file upper", policy: "all", url: "FILE:///etc/passwd", reason: `scheme "file" is never allowed`},
	{name: "chrome", policy: "all", url: "chrome://settings", reason: `scheme "chrome" is never allowed`},
	{name: "chrome-extension", policy: "all", url: "chrome-extension://abcdef/x.html", reason: `scheme "chrome-extension" is never allowed`},
	{name: "devtools", policy: "all", url: "devtools://devtools/bundled/inspector.html", reason: `scheme "devtools" is never allowed`},
	{name: "view-source", policy: "all", url: "view-source:https://example.com", reason: `scheme "view-source" is never allowed`},
	{name: "javascript", policy: "all", url: "javascript:alert(1)", reason: `scheme "javascript" is never allowed`},
	{name: "ftp", policy: "all", url: "ftp://example.com/", reason: `scheme "ftp" is never allowed`},
	{name: "filesystem", policy: "all", url: "filesystem:https://example.com/temporary/x", reason: `scheme "filesystem" is never allowed`},
	{name: "host as scheme", policy: "main", url: "example.com:443", reason: `scheme "example.com" is never allowed`},
	// Malformed.
	{name: "empty url", policy: "main", url: "", reason: reasonMalformed},
	{name: "spaces only", policy: "main", url: "   ", reason: reasonMalformed},
	{name: "no scheme", policy: "main", url: "example.com", reason: reasonMalformed},
	{name: "scheme relative", policy: "main", url: "//example.com/", reason: reasonMalformed},
	{name: "empty host", policy: "main", url: "https://", reason: reasonMalformed},
	{name: "empty host slash", policy: "main", url: "https:///", reason: reasonMalformed},
	{name: "digit scheme", policy: "main", url: "1http://example.com/", reason: reasonMalformed},
	// Blocklist first.
	{name: "blocked exact", policy: "block", url: "https://ads.example.com/", reason: `blocked by "ads.example.com"`, rule: "ads.example.com", judged: "ads.example.com"},
	{name: "blocked exact upper", policy: "block", url: "https://ADS.example.com./", reason: `blocked by "ads.example.com"`},
	{name: "block exact spares sub", policy: "block", url: "https://x.ads.example.com/", allowed: true, rule: "*.example.com"},
	{name: "blocked wildcard", policy: "block", url: "https://a.tracker.test/", reason: `blocked by "*.tracker.test"`, rule: "*.tracker.test"},
	{name: "block wildcard spares apex", policy: "block", url: "https://tracker.test/", allowed: true, rule: "*"},
	{name: "blocked scheme", policy: "block", url: "http://plain.test/", reason: `blocked by "http://plain.test"`},
	{name: "blocked scheme ws", policy: "block", url: "ws://plain.test/", reason: `blocked by "http://plain.test"`},
	{name: "block scheme spares https", policy: "block", url: "https://plain.test/", allowed: true},
	{name: "block beats allow all", policy: "block", url: "https://ads.example.com:8443/", reason: `blocked by "ads.example.com"`},
	{name: "block all", policy: "blockall", url: "https://example.com/", reason: `blocked by "*"`, rule: "*"},
	{name: "block all spares about", policy: "blockall", url: "about:blank", allowed: true},
	{name: "block scheme entry", policy: "schemes", url: "http://example.com/", reason: `blocked by "http://example.com"`},
	{name: "block scheme entry https", policy: "schemes", url: "https://example.com/", allowed: true},
	// Empty and allow-all policies.
	{name: "empty denies", policy: "empty", url: "https://example.com/", reason: reasonEmpty, judged: "example.com"},
	{name: "empty denies ip", policy: "empty", url: "http://127.0.0.1/", reason: reasonEmpty},
	{name: "empty allows about", policy: "empty", url: "about:blank", allowed: true},
	{name: "empty denies file", policy: "empty", url: "file:///", reason: `scheme "file" is never allowed`},
	{name: "empty malformed", policy: "empty", url: "https://", reason: reasonMalformed},
	{name: "empty with block", policy: "emptyblk", url: "https://evil.test/", reason: `blocked by "evil.test"`},
	{name: "empty with block other", policy: "emptyblk", url: "https://example.com/", reason: reasonEmpty},
	{name: "allow all", policy: "all", url: "https://anything.test:1/", allowed: true, reason: `allowed by "*"`, rule: "*", judged: "anything.test"},
	{name: "allow all ipv6", policy: "all", url: "http://[2001:DB8::1]/", allowed: true, judged: "2001:db8::1"},
	// DecideHost: scheme unknown.
	{name: "host exact", policy: "main", hostOnly: true, host: "example.com", port: 443, allowed: true, rule: "example.com"},
	{name: "host upper dot", policy: "main", hostOnly: true, host: "EXAMPLE.com.", port: 8443, allowed: true, judged: "example.com"},
	{name: "host origin port", policy: "main", hostOnly: true, host: "secure.test", port: 443, allowed: true, rule: "https://secure.test"},
	{name: "host origin other port", policy: "main", hostOnly: true, host: "secure.test", port: 80, reason: `port 80 is not allowed for host "secure.test"`},
	{name: "host any port", policy: "main", hostOnly: true, host: "anyport.test", port: 1, allowed: true},
	{name: "host wildcard", policy: "main", hostOnly: true, host: "x.wild.test", port: 443, allowed: true, rule: "*.wild.test"},
	{name: "host ipv6 brackets", policy: "main", hostOnly: true, host: "[::1]", port: 8080, allowed: true, judged: "::1"},
	{name: "host ipv6 bare", policy: "main", hostOnly: true, host: "::1", port: 8080, allowed: true},
	{name: "host ipv6 port", policy: "main", hostOnly: true, host: "::1", port: 80, reason: `port 80 is not allowed for host "::1"`},
	{name: "host mapped", policy: "main", hostOnly: true, host: "::ffff:127.0.0.1", port: 5, allowed: true, judged: "127.0.0.1"},
	{name: "host idna", policy: "main", hostOnly: true, host: "bücher.example", port: 443, allowed: true, judged: "xn--bcher-kva.example"},
	{name: "host denied", policy: "main", hostOnly: true, host: "evil.test", port: 443, reason: `host "evil.test" is not in the allowlist`},
	{name: "host hex ip", policy: "all", hostOnly: true, host: "0x7f.1", port: 80, reason: "invalid host: non-canonical IPv4*"},
	{name: "host empty", policy: "all", hostOnly: true, host: "", port: 80, reason: "invalid host: empty host"},
	{name: "host with port", policy: "all", hostOnly: true, host: "example.com:80", port: 80, reason: "invalid host*"},
	{name: "host port zero", policy: "main", hostOnly: true, host: "example.com", port: 0, reason: "invalid port 0"},
	{name: "host port big", policy: "main", hostOnly: true, host: "example.com", port: 70000, reason: "invalid port 70000"},
	{name: "host block any scheme", policy: "block", hostOnly: true, host: "plain.test", port: 80, reason: `blocked by "http://plain.test"`},
	{name: "host block other port", policy: "block", hostOnly: true, host: "plain.test", port: 443, allowed: true},
	{name: "host empty policy", policy: "empty", hostOnly: true, host: "example.com", port: 443, reason: reasonEmpty},
}

func mustPolicies(t testing.TB) map[string]*Policy {
	t.Helper()
	out := make(map[string]*Policy, len(testPolicies))
	for name, lists := range testPolicies {
		p, err := Parse([]string{lists[0]}, []string{lists[1]})
		if err != nil {
			t.Fatalf("policy %s: %v", name, err)
		}
		out[name] = p
	}
	return out
}

func TestDecide(t *testing.T) {
	policies := mustPolicies(t)
	for _, c := range decideCases {
		t.Run(c.name, func(t *testing.T) {
			p, ok := policies[c.policy]
			if !ok {
				t.Fatalf("unknown policy %q", c.policy)
			}
			var d Decision
			if c.hostOnly {
				d = p.DecideHost(c.host, c.port)
			} else {
				d = p.Decide(c.url)
			}
			what := c.url
			if c.hostOnly {
				what = c.host
			}
			if d.Allowed != c.allowed {
				t.Errorf("%q: allowed = %v, want %v (reason %q)", what, d.Allowed, c.allowed, d.Reason)
			}
			if d.Reason == "" {
				t.Errorf("%q: empty reason", what)
			}
			if c.reason != "" {
				if want, ok := strings.CutSuffix(c.reason, "*"); ok {
					if !strings.HasPrefix(d.Reason, want) {
						t.Errorf("%q: reason = %q, want prefix %q", what, d.Reason, want)
					}
				} else if d.Reason != c.reason {
					t.Errorf("%q: reason = %q, want %q", what, d.Reason, c.reason)
				}
			}
			if c.rule != "" && d.Rule != c.rule {
				t.Errorf("%q: rule = %q, want %q", what, d.Rule, c.rule)
			}
			if c.judged != "-" && c.judged != "" && d.Host != c.judged {
				t.Errorf("%q: host = %q, want %q", what, d.Host, c.judged)
			}
			if c.judged == "" && c.reason == reasonAbout && d.Host != "" {
				t.Errorf("%q: host = %q, want none", what, d.Host)
			}
		})
	}
}

func TestNilAndZeroPolicy(t *testing.T) {
	for _, p := range []*Policy{nil, {}} {
		if d := p.Decide("https://example.com/"); d.Allowed || d.Reason != reasonEmpty {
			t.Errorf("Decide on %#v = %+v, want empty-allowlist denial", p, d)
		}
		if d := p.DecideHost("example.com", 443); d.Allowed || d.Reason != reasonEmpty {
			t.Errorf("DecideHost on %#v = %+v", p, d)
		}
		if d := p.Decide("about:blank"); !d.Allowed {
			t.Errorf("about:blank on %#v denied: %+v", p, d)
		}
		if !p.Empty() || p.AllowAll() || len(p.Origins()) != 0 || len(p.Blocked()) != 0 || len(p.IPEntries()) != 0 {
			t.Errorf("accessors on %#v not empty", p)
		}
		b, err := p.MarshalJSON()
		if err != nil || string(b) != `{"allowed":[],"blocked":[],"allowAll":false}` {
			t.Errorf("MarshalJSON = %s, %v", b, err)
		}
	}
	if (Decision{}).Allowed {
		t.Error("zero Decision allows")
	}
}
