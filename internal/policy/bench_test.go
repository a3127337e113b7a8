package policy

import "testing"

// benchPolicy is a realistic allowlist: a few exact hosts, origins and
// wildcards, plus a blocklist, so lookups probe both maps.
func benchPolicy(b *testing.B) *Policy {
	b.Helper()
	p, err := Parse(
		[]string{"example.com; *.example.com; https://api.example.org; *.cdn.test; localhost:3000; 127.0.0.1; github.com; *.github.com; *.githubusercontent.com"},
		[]string{"ads.example.com; *.tracker.test"},
	)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func BenchmarkDecide(b *testing.B) {
	p := benchPolicy(b)
	for _, c := range []struct{ name, url string }{
		{"allowed-wildcard", "https://sub.example.com/path?q"},
		{"allowed-exact", "https://example.com/index.html"},
		{"allowed-origin", "https://api.example.org/v1/items?page=2"},
		{"blocked", "https://ads.example.com/pixel.gif"},
		{"denied", "https://evil.test/"},
		{"data", "data:image/png;base64,iVBORw0KGgo="},
		{"upper-case-host", "https://Sub.Example.com/path"},
		{"idna", "https://bücher.example.com/"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := p.Decide(c.url); d.Reason == "" {
					b.Fatal("empty reason")
				}
			}
		})
	}
}

func BenchmarkDecideHost(b *testing.B) {
	p := benchPolicy(b)
	b.ReportAllocs()
	for b.Loop() {
		if d := p.DecideHost("sub.example.com", 443); !d.Allowed {
			b.Fatal(d.Reason)
		}
	}
}
