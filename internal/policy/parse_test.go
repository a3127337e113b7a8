package policy

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// entryCases: one entry each; canonical is the Origins() form, or reason the
// EntryError reason (a trailing "*" means prefix).
var entryCases = []struct {
	entry, canonical, reason string
}{
	{entry: "example.com", canonical: "example.com"},
	{entry: "  Example.COM.  ", canonical: "example.com"},
	{entry: "example.com:8443", canonical: "example.com:8443"},
	{entry: "example.com:08443", canonical: "example.com:8443"},
	{entry: "example.com:*", canonical: "example.com"},
	{entry: "example.com/", canonical: "example.com"},
	{entry: "https://example.com", canonical: "https://example.com"},
	{entry: "HTTPS://Example.com:443/", canonical: "https://example.com"},
	{entry: "https://example.com:8443", canonical: "https://example.com:8443"},
	{entry: "http://example.com:80", canonical: "http://example.com"},
	{entry: "http://example.com:*", canonical: "http://example.com:*"},
	{entry: "ws://example.com", canonical: "ws://example.com"},
	{entry: "wss://example.com:443", canonical: "wss://example.com"},
	{entry: "*.example.com", canonical: "*.example.com"},
	{entry: "*.Example.com.", canonical: "*.example.com"},
	{entry: "https://*.example.com:*", canonical: "https://*.example.com:*"},
	{entry: "*.com", canonical: "*.com"},
	{entry: "bücher.example", canonical: "xn--bcher-kva.example"},
	{entry: "*.bücher.example", canonical: "*.xn--bcher-kva.example"},
	{entry: "localhost", canonical: "localhost"},
	{entry: "localhost:3000", canonical: "localhost:3000"},
	{entry: "under_score.example", canonical: "under_score.example"},
	{entry: "127.0.0.1", canonical: "127.0.0.1"},
	{entry: "127.0.0.1:9222", canonical: "127.0.0.1:9222"},
	{entry: "http://10.0.0.1:8080", canonical: "http://10.0.0.1:8080"},
	{entry: "[::1]", canonical: "[::1]"},
	{entry: "[::1]:8080", canonical: "[::1]:8080"},
	{entry: "[0:0::1]:8080", canonical: "[::1]:8080"},
	{entry: "https://[2001:DB8::1]", canonical: "https://[2001:db8::1]"},
	{entry: "[::ffff:127.0.0.1]", canonical: "127.0.0.1"},
	{entry: "*", canonical: "*"},

	{entry: "exa mple.com/path", reason: "paths are not allowed"},
	{entry: "example.com/path", reason: "paths are not allowed"},
	{entry: "https://example.com//", reason: "paths are not allowed"},
	{entry: "example.com?q=1", reason: "queries are not allowed"},
	{entry: "example.com#top", reason: "fragments are not allowed"},
	{entry: `example.com\x`, reason: "backslashes are not allowed"},
	{entry: "user@example.com", reason: "userinfo is not allowed"},
	{entry: "https://user:pw@example.com", reason: "userinfo is not allowed"},
	{entry: "a.*.com", reason: "wildcards are only allowed as a whole first label*"},
	{entry: "ex*ample.com", reason: "wildcards are only allowed*"},
	{entry: "*example.com", reason: "wildcards are only allowed*"},
	{entry: "**.example.com", reason: "wildcards are only allowed*"},
	{entry: "*.*.example.com", reason: "wildcards are only allowed*"},
	{entry: "example.*", reason: "wildcards are only allowed*"},
	{entry: "*.", reason: "empty host"},
	{entry: "*:8080", reason: `"*" must stand alone*`},
	{entry: "https://*", reason: `"*" must stand alone*`},
	{entry: "*.127.0.0.1", reason: "wildcards cannot be combined with IP addresses"},
	{entry: "a..com", reason: "empty label in host"},
	{entry: ".example.com", reason: "empty label in host (write*"},
	{entry: "example.com..", reason: "empty label in host"},
	{entry: "example.com:0", reason: `invalid port "0"*`},
	{entry: "example.com:65536", reason: `invalid port "65536"*`},
	{entry: "example.com:123456", reason: `invalid port "123456"`},
	{entry: "example.com:-1", reason: `invalid port "-1"`},
	{entry: "example.com:http", reason: `invalid port "http"`},
	{entry: "example.com:", reason: "empty port"},
	{entry: "example.com:80:80", reason: "too many colons"},
	{entry: "ftp://example.com", reason: `unknown scheme "ftp"*`},
	{entry: "file:///etc/passwd", reason: `unknown scheme "file"*`},
	{entry: "chrome://settings", reason: `unknown scheme "chrome"*`},
	{entry: "://example.com", reason: `missing scheme before "://"`},
	{entry: "https:example.com", reason: `missing "//" after scheme "https"`},
	{entry: "about:blank", reason: `scheme "about" can never be allowed*`},
	{entry: "javascript:alert(1)", reason: `scheme "javascript" can never be allowed*`},
	{entry: "https://", reason: "empty host"},
	{entry: ":8080", reason: "empty host"},
	{entry: "::1", reason: "IPv6 addresses must be written in brackets*"},
	{entry: "::1:8080", reason: "IPv6 addresses must be written in brackets*"},
	{entry: "[::1", reason: "unterminated IPv6 literal"},
	{entry: "[::1]x", reason: "unexpected text after IPv6 literal"},
	{entry: "[::1]:", reason: "empty port"},
	{entry: "[fe80::1%25eth0]", reason: "IPv6 zones*"},
	{entry: "[127.0.0.1]", reason: "invalid IPv6 address"},
	{entry: "[example.com]", reason: "invalid IPv6 address"},
	{entry: "0x7f.1", reason: "non-canonical IPv4 address*"},
	{entry: "017700000001", reason: "non-canonical IPv4 address*"},
	{entry: "2130706433", reason: "non-canonical IPv4 address*"},
	{entry: "127.1", reason: "non-canonical IPv4 address*"},
	{entry: "127.0.0.01", reason: "non-canonical IPv4 address*"},
	{entry: "256.0.0.1", reason: "non-canonical IPv4 address*"},
	{entry: "exa mple.com", reason: `invalid character ' ' in host`},
	{entry: "exa!mple.com", reason: `invalid character '!' in host`},
	{entry: "a\u200d.example", reason: "invalid international domain name"},
	{entry: "exa%zzmple.com", reason: "invalid percent-encoding in host"},
}

func TestParseEntry(t *testing.T) {
	for _, c := range entryCases {
		p, err := Parse([]string{c.entry}, nil)
		if c.reason == "" {
			if err != nil {
				t.Errorf("%q: %v", c.entry, err)
				continue
			}
			if got := p.Origins(); len(got) != 1 || got[0] != c.canonical {
				t.Errorf("%q: origins %q, want [%q]", c.entry, got, c.canonical)
			}
			// Canonical forms are a fixed point.
			q, err := Parse(p.Origins(), nil)
			if err != nil || !slices.Equal(q.Origins(), p.Origins()) {
				t.Errorf("%q: canonical %q does not reparse to itself: %v %q", c.entry, c.canonical, err, q.Origins())
			}
			continue
		}
		var ee *EntryError
		if !errors.As(err, &ee) || !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("%q: error %v, want *EntryError wrapping ErrInvalidEntry", c.entry, err)
			continue
		}
		if ee.List != "allow" || ee.Entry != strings.TrimSpace(c.entry) {
			t.Errorf("%q: EntryError %+v", c.entry, ee)
		}
		if want, ok := strings.CutSuffix(c.reason, "*"); ok {
			if !strings.HasPrefix(ee.Reason, want) {
				t.Errorf("%q: reason %q, want prefix %q", c.entry, ee.Reason, want)
			}
		} else if ee.Reason != c.reason {
			t.Errorf("%q: reason %q, want %q", c.entry, ee.Reason, c.reason)
		}
		// The same entry in the blocklist fails the same way, naming that list.
		_, err = Parse(nil, []string{c.entry})
		if !errors.As(err, &ee) || ee.List != "block" {
			t.Errorf("%q in block list: %v", c.entry, err)
		}
	}
}

func TestEntryErrorMessage(t *testing.T) {
	_, err := Parse([]string{"example.com; exa mple.com/path"}, nil)
	want := `invalid allow entry "exa mple.com/path": paths are not allowed`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
}

func TestParseSplitsAndAccessors(t *testing.T) {
	allow := []string{
		"example.com;https://secure.test , *.wild.test\n127.0.0.1\r\n[::1]:8080;;  ;",
		"EXAMPLE.com, 127.0.0.1:9, [::1]",
	}
	p, err := Parse(allow, []string{"ads.example.com;*.tracker.test"})
	if err != nil {
		t.Fatal(err)
	}
	wantOrigins := []string{"example.com", "https://secure.test", "*.wild.test", "127.0.0.1", "[::1]:8080", "127.0.0.1:9", "[::1]"}
	if got := p.Origins(); !slices.Equal(got, wantOrigins) {
		t.Errorf("Origins = %q, want %q", got, wantOrigins)
	}
	if got := p.Blocked(); !slices.Equal(got, []string{"ads.example.com", "*.tracker.test"}) {
		t.Errorf("Blocked = %q", got)
	}
	wantIPs := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
	if got := p.IPEntries(); !slices.Equal(got, wantIPs) {
		t.Errorf("IPEntries = %v, want %v", got, wantIPs)
	}
	if p.Empty() || p.AllowAll() {
		t.Errorf("Empty=%v AllowAll=%v", p.Empty(), p.AllowAll())
	}
	// Returned slices are copies.
	p.Origins()[0] = "mutated"
	if p.Origins()[0] != "example.com" {
		t.Error("Origins exposes internal state")
	}
	b, err := p.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"allowed":["example.com","https://secure.test","*.wild.test","127.0.0.1","[::1]:8080","127.0.0.1:9","[::1]"],"blocked":["ads.example.com","*.tracker.test"],"allowAll":false}`
	if string(b) != want {
		t.Errorf("MarshalJSON = %s\nwant %s", b, want)
	}

	all, err := Parse([]string{" * "}, nil)
	if err != nil || !all.AllowAll() || all.Empty() {
		t.Fatalf("Parse(*) = %v, %v", all, err)
	}
	if b, _ := all.MarshalJSON(); string(b) != `{"allowed":["*"],"blocked":[],"allowAll":true}` {
		t.Errorf("MarshalJSON(*) = %s", b)
	}
	empty, err := Parse([]string{" ; , \n"}, []string{""})
	if err != nil || !empty.Empty() {
		t.Fatalf("Parse(separators only) = %v, %v", empty, err)
	}
}

// readList reads a testdata allowlist; lines starting with "#" are comments,
// and a "# want: " comment gives the expected canonical Origins joined by "; "
// or, for broken files, the entry the error must name.
func readList(t *testing.T, path string) (list, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if w, ok := strings.CutPrefix(l, "# want: "); ok {
			want = strings.TrimSpace(w)
		}
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if want == "" {
		t.Fatalf("%s: no \"# want: \" line", path)
	}
	return strings.Join(lines, "\n"), want
}

func TestBrokenAllowlists(t *testing.T) {
	files, _ := filepath.Glob("testdata/broken/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata/broken/*.txt")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			list, want := readList(t, f)
			_, err := Parse([]string{list}, nil)
			var ee *EntryError
			if !errors.As(err, &ee) || !errors.Is(err, ErrInvalidEntry) {
				t.Fatalf("error %v, want *EntryError", err)
			}
			if ee.Entry != want || ee.List != "allow" || ee.Reason == "" {
				t.Errorf("EntryError %+v, want entry %q", ee, want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q does not name %q", err, want)
			}
		})
	}
}

func TestGoodAllowlists(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata/good/*.txt")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			list, want := readList(t, f)
			p, err := Parse([]string{list}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(p.Origins(), "; "); got != want {
				t.Errorf("Origins = %q\nwant      %q", got, want)
			}
		})
	}
}

func TestNormalizeHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM.": "example.com", "bücher.example": "xn--bcher-kva.example", "[::1]": "::1",
		"::FFFF:10.0.0.1": "10.0.0.1", "%65xample.com": "example.com", "1.2.3.4": "1.2.3.4",
		"ｅｘａｍｐｌｅ。com": "example.com",
	} {
		if got, err := NormalizeHost(in); err != nil || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".", "a..b", "0x7f.1", "2130706433", "[::1", "[1.2.3.4]", "a b", "fe80::1%eth0", "x:80"} {
		if got, err := NormalizeHost(in); !errors.Is(err, ErrInvalidHost) {
			t.Errorf("NormalizeHost(%q) = %q, %v; want ErrInvalidHost", in, got, err)
		}
	}
}
