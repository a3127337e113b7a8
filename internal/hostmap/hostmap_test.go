package hostmap

import (
	"errors"
	"testing"
)

func TestParseAndLookup(t *testing.T) {
	m, err := Parse([]string{"*.test=127.0.0.1", "intranet.example=10.0.0.5", "v6.example=[::1]"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host string
		want string
		ok   bool
	}{
		{"allowed.test", "127.0.0.1", true},
		{"a.b.test", "127.0.0.1", true},
		{"test", "", false},
		{"intranet.example", "10.0.0.5", true},
		{"x.intranet.example", "", false},
		{"v6.example", "::1", true},
		{"eviltest", "", false},
	}
	for _, c := range cases {
		got, ok := m.Lookup(c.host)
		if ok != c.ok || (ok && got.String() != c.want) {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", c.host, got, ok, c.want, c.ok)
		}
	}
	if got, want := m.ChromeRules(true, "127.0.0.1"), "MAP *.test 127.0.0.1, MAP intranet.example 10.0.0.5, MAP v6.example [::1], MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"; got != want {
		t.Errorf("ChromeRules = %q, want %q", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"noequals", "a.test=notanip", "*=127.0.0.1", "a.*.test=127.0.0.1", "=1.2.3.4", "a..test=1.2.3.4"} {
		_, err := Parse([]string{bad})
		var re *RuleError
		if !errors.As(err, &re) || !errors.Is(err, ErrInvalidRule) || re.Rule != bad {
			t.Errorf("Parse(%q) error = %v, want RuleError naming it", bad, err)
		}
	}
}
