package policyfile

import (
	"errors"
	"strings"
	"testing"
)

func mustParse(t testing.TB, s string) *Set {
	t.Helper()
	set, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestSelect(t *testing.T) {
	base := "allow: [example.com]\ngroupHeader: X-Group\ngroups:\n  staff: {allow: [wiki.example]}\n"
	def := mustParse(t, base)
	refuse := mustParse(t, base+"unknownGroup: refuse\n")
	for _, c := range []struct {
		set     *Set
		value   string
		want    string
		refused bool
	}{
		{def, "staff", "staff", false},
		{def, "", "", false},
		{def, "Staff", "", false}, // names match exactly
		{def, "nobody", "", false},
		{refuse, "staff", "staff", false},
		{refuse, "nobody", "", true},
		{refuse, "", "", true}, // no header is an unknown group too
	} {
		got, err := c.set.Select(c.value)
		if got != c.want || errors.Is(err, ErrUnknownGroup) != c.refused {
			t.Errorf("Select(%q) refuse=%v: %q, %v", c.value, c.set.RefusesUnknown(), got, err)
		}
	}
	if g, _ := Static(nil, "").Select("staff"); g != "" {
		t.Errorf("a Set without groups selected %q", g)
	}
	// A group a reload removed: default, or nothing when unknown groups are refused.
	if def.Group("gone") != def.Default() {
		t.Error("a removed group must fall back to the default group")
	}
	if g := refuse.Group("gone"); !g.Policy.Empty() || g.Policy.Decide("https://example.com/").Allowed {
		t.Error("a removed group under unknownGroup: refuse must reach nothing")
	}
}

func TestCompare(t *testing.T) {
	old := mustParse(t, "allow: [a.example, b.example]\nblock: [x.example]\ngroupHeader: X-Group\ngroups:\n  staff: {allow: [wiki.example]}\n  gone: {allow: [g.example]}\n")
	new := mustParse(t, "allow: [a.example, c.example]\nblock: [x.example]\ninstructions: hi\ngroupHeader: X-Group\ngroups:\n  staff: {allow: [wiki.example]}\n  fresh: {allow: [f.example]}\n")
	d := Compare(old, new)
	got := d.String()
	for _, want := range []string{"default: +allow c.example -allow b.example instructions changed", "group gone: removed", "group fresh: new +allow f.example"} {
		if !strings.Contains(got, want) {
			t.Errorf("diff %q lacks %q", got, want)
		}
	}
	// staff inherits instructions from the top level, so it changed too.
	if !strings.Contains(got, "group staff: instructions changed") {
		t.Errorf("diff %q: staff's inherited instructions changed", got)
	}
	if !Compare(new, new).Empty() || Compare(new, new).String() != "no change" {
		t.Error("a Set compared with itself must be no change")
	}
}
