package policy

import (
	"slices"
	"testing"
)

// TestCompose checks that a composed policy decides as the policy parsed
// from the same two lists, and that it shares them rather than copying.
func TestCompose(t *testing.T) {
	top, err := Parse([]string{"example.com, *.wiki.test, 10.0.0.1"}, []string{"ads.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	own, err := Parse([]string{"staff.test"}, []string{"*.wiki.test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		got          *Policy
		allow, block []string
	}{
		{"top allow, own block", Compose(top, own), []string{"example.com, *.wiki.test, 10.0.0.1"}, []string{"*.wiki.test"}},
		{"own allow, top block", Compose(own, top), []string{"staff.test"}, []string{"ads.example.com"}},
		{"nil block", Compose(top, nil), []string{"example.com, *.wiki.test, 10.0.0.1"}, nil},
	} {
		want, err := Parse(c.allow, c.block)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []string{"https://example.com/", "https://ads.example.com/", "https://a.wiki.test/", "https://staff.test/", "http://10.0.0.1/", "https://evil.test/"} {
			if g, w := c.got.Decide(u), want.Decide(u); g != w {
				t.Errorf("%s: %s: %+v, want %+v", c.name, u, g, w)
			}
		}
		if !slices.Equal(c.got.Origins(), want.Origins()) || !slices.Equal(c.got.Blocked(), want.Blocked()) || !slices.Equal(c.got.IPEntries(), want.IPEntries()) {
			t.Errorf("%s: lists %v %v %v, want %v %v %v", c.name, c.got.Origins(), c.got.Blocked(), c.got.IPEntries(), want.Origins(), want.Blocked(), want.IPEntries())
		}
	}
	if p := Compose(top, own); p.allow != top.allow || p.block != own.block {
		t.Error("Compose copied a list instead of sharing it")
	}
	if n := Compose(top, own).Entries(); n != 4 {
		t.Errorf("Entries = %d, want 4 (3 allow + 1 block)", n)
	}
	if !Compose(nil, nil).Empty() || Compose(nil, nil).Decide("https://example.com/").Allowed {
		t.Error("Compose(nil, nil) must be empty and refuse everything")
	}
}

// TestValidate: Validate counts and refuses entries as Parse does.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		list, value string
	}{
		{"allow", "example.com; *.example.org, https://x.test:8443"},
		{"block", "ads.example.com"},
		{"allow", "exa mple.com/path"},
		{"block", "file:///etc"},
		{"allow", " ; ,"},
	} {
		n, err := Validate(c.list, c.value)
		allow, block := []string{c.value}, []string(nil)
		if c.list == "block" {
			allow, block = nil, allow
		}
		p, perr := Parse(allow, block)
		if (err == nil) != (perr == nil) || (err != nil && err.Error() != perr.Error()) {
			t.Errorf("%s %q: Validate %v, Parse %v", c.list, c.value, err, perr)
		}
		if err == nil && n != p.Entries() {
			t.Errorf("%s %q: Validate counts %d, Parse holds %d", c.list, c.value, n, p.Entries())
		}
	}
}
