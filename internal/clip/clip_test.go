package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"short", "https://a.test/", "https://a.test/"},
		{"exactly max", strings.Repeat("a", Max), strings.Repeat("a", Max)},
		{"one over", strings.Repeat("a", Max+1), strings.Repeat("a", Max)},
		// "é" is two bytes: starting at 119 it straddles the cut.
		{"straddling rune", strings.Repeat("a", Max-1) + "é", strings.Repeat("a", Max-1)},
		// "€" is three bytes: 118 + 3 straddles too.
		{"three byte rune", strings.Repeat("a", Max-2) + "€€", strings.Repeat("a", Max-2)},
		{"rune ends at max", strings.Repeat("a", Max-2) + "é" + "z", strings.Repeat("a", Max-2) + "é"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := String(c.in)
			if got != c.want {
				t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("String(%q) = %q is not valid UTF-8", c.in, got)
			}
		})
	}
}

func FuzzString(f *testing.F) {
	f.Add(strings.Repeat("é", 100))
	f.Fuzz(func(t *testing.T, s string) {
		got := String(s)
		if len(got) > Max || !strings.HasPrefix(s, got) {
			t.Fatalf("String(%q) = %q: longer than %d or not a prefix", s, got, Max)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("String(%q) = %q: valid input, invalid output", s, got)
		}
		if len(s) <= Max && got != s {
			t.Fatalf("String(%q) = %q: short input changed", s, got)
		}
	})
}
