package reader

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureDir holds Mozilla Readability's real-world test pages; CI clones
// the repo with shared/ beside it.
const fixtureDir = "../../../shared/fixtures/readability"

// TestFixturesStatic scores Extract on saved (not rendered) fixture pages
// and prints the table: three small pages by default (the race detector
// makes all 27 take 20 s), every page with CDPGUARD_READER_TABLE=1. The
// rendered measurement through the guard is e2e's TestReader/fixtures;
// this one needs no browser.
func TestFixturesStatic(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(fixtureDir, "*", "source.html"))
	if len(dirs) == 0 {
		t.Skip("fixtures not found at " + fixtureDir)
	}
	if os.Getenv("CDPGUARD_READER_TABLE") != "1" {
		dirs = nil
		for _, name := range []string{"heise", "mozilla-1", "v8-blog"} {
			dirs = append(dirs, filepath.Join(fixtureDir, name, "source.html"))
		}
	}
	var sumP, sumR float64
	var lines []string
	for _, src := range dirs {
		dir := filepath.Dir(src)
		name := filepath.Base(dir)
		srcHTML, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		exp, err := os.ReadFile(filepath.Join(dir, "expected.html"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := TextContent(string(exp))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Extract(Page{URL: "http://fakehost/" + name + "/", HTML: string(srcHTML)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, r := Score(got, want)
		sumP += p
		sumR += r
		lines = append(lines, fmt.Sprintf("%-22s P=%.3f R=%.3f chars=%d", name, p, r, len(got)))
	}
	n := float64(len(dirs))
	t.Logf("\n%s\nmean P=%.3f R=%.3f over %d pages", strings.Join(lines, "\n"), sumP/n, sumR/n, len(dirs))
	if sumP/n < 0.93 || sumR/n < 0.97 {
		t.Errorf("under target: mean precision %.3f (≥ 0.93), recall %.3f (≥ 0.97)", sumP/n, sumR/n)
	}
}

// BenchmarkExtract is the Go half of a read: parsing, main content and
// writing, on a 120 kB fixture (medium-1) as saved.
func BenchmarkExtract(b *testing.B) {
	src, err := os.ReadFile(filepath.Join(fixtureDir, "medium-1", "source.html"))
	if err != nil {
		b.Skip("fixtures not found at " + fixtureDir)
	}
	p := Page{URL: "http://fakehost/medium-1/", HTML: string(src)}
	for b.Loop() {
		if _, err := Extract(p); err != nil {
			b.Fatal(err)
		}
	}
}
