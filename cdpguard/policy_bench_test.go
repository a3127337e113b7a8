package cdpguard

import (
	"path/filepath"
	"testing"
)

// BenchmarkJudgeDecision compares the Fetch judge's decision as it was
// (one compiled policy held by the judge) with the snapshot read per
// decision that live reload needs, without and with groups (a frame no
// user owns: the lookup that finds nothing is the dearest one).
func BenchmarkJudgeDecision(b *testing.B) {
	const url = "https://sub.example.com/path?q"
	allow := []string{"example.com; *.example.com; https://api.example.org; *.cdn.test; localhost:3000; 127.0.0.1; github.com; *.github.com; *.githubusercontent.com"}
	g, err := newGuard(Config{Allow: allow, Block: []string{"ads.example.com; *.tracker.test"}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = g.Close() }()
	path := filepath.Join(b.TempDir(), "policy.yaml")
	writeFile(b, path, "allow: [\"example.com\", \"*.example.com\", \"https://api.example.org\", \"*.cdn.test\", \"localhost:3000\", \"127.0.0.1\", \"github.com\", \"*.github.com\", \"*.githubusercontent.com\"]\nblock: [ads.example.com, \"*.tracker.test\"]\ngroupHeader: X-Group\ngroups:\n  staff: {allow: [wiki.test]}\n")
	gg, err := newGuard(Config{PolicyFile: path})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = gg.Close() }()
	held := g.rules().Default().Policy
	b.Run("held-policy", func(b *testing.B) { // before: the judge's own *policy.Policy
		b.ReportAllocs()
		for b.Loop() {
			if !held.Decide(url).Allowed {
				b.Fatal("denied")
			}
		}
	})
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := g.rulesForFrame("F1")
			if !p.Decide(url).Allowed {
				b.Fatal("denied")
			}
		}
	})
	b.Run("snapshot-groups", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, _ := gg.rulesForFrame("F1")
			if !p.Decide(url).Allowed {
				b.Fatal("denied")
			}
		}
	})
}
