package ascii

import "testing"

func TestEqualFold(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"HTTPS", "https", true},
		{"Service-Worker", "service-worker", true},
		{"script", "script", true},
		{"", "", true},
		{"http", "https", false},
		{"ſcript", "script", false}, // long s: strings.EqualFold says true
		{"\u212Aey", "key", false},  // Kelvin sign
		{"a[", "A{", false},         // only letters fold
	} {
		if got := EqualFold(c.a, c.b); got != c.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestToLower(t *testing.T) {
	for in, want := range map[byte]byte{'A': 'a', 'Z': 'z', 'a': 'a', '@': '@', '[': '[', '0': '0', 0xC0: 0xC0} {
		if got := ToLower(in); got != want {
			t.Errorf("ToLower(%q) = %q, want %q", in, got, want)
		}
	}
}
