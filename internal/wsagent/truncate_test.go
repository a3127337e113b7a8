package wsagent

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateReasonKeepsUTF8(t *testing.T) {
	for _, c := range []struct {
		name, in string
	}{
		{"short", "cdpguard: refused"},
		{"ascii", strings.Repeat("a", 300)},
		{"two-byte at the cut", strings.Repeat("a", 119) + "é" + strings.Repeat("b", 10)},
		{"three-byte at the cut", strings.Repeat("a", 119) + "€" + strings.Repeat("b", 10)},
		{"four-byte at the cut", strings.Repeat("a", 118) + "😀" + strings.Repeat("b", 10)},
		{"all multibyte", strings.Repeat("ü", 200)},
		{"url", "http://" + strings.Repeat("пример", 30) + ".test/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := TruncateReason(c.in)
			if len(got) > 123 {
				t.Errorf("len = %d, want ≤ 123 (a close frame's reason)", len(got))
			}
			if !utf8.ValidString(got) {
				t.Errorf("%q is not valid UTF-8", got)
			}
			if !strings.HasPrefix(c.in, got) {
				t.Errorf("%q is not a prefix of the input", got)
			}
			if len(c.in) <= 120 && got != c.in {
				t.Errorf("short reason changed: %q", got)
			}
			if len(c.in) > 120 && len(got) < 117 {
				t.Errorf("cut too much: %d bytes", len(got))
			}
		})
	}
}
