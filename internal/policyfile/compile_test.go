package policyfile

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestGroupsShareTheList: 2,000 groups that leave out allow, over a
// 2,000-entry list, compile to about one list's memory, not 2,000 copies
// (the issue measured 1.08 GB), and each group still decides by the list.
func TestGroupsShareTheList(t *testing.T) {
	data := []byte(bigFile(2000, 2000, nil))
	kept, v := retained(func() any {
		s, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	s := v.(*Set)
	t.Logf("a %d-byte file of 2,000 groups over 2,000 entries keeps %d bytes compiled", len(data), kept)
	if kept > 8<<20 {
		t.Errorf("the compiled file keeps %d bytes; want under 8 MiB (groups must share the list)", kept)
	}
	g := s.Group("g1999")
	if !g.Policy.Decide("https://x1234.t/").Allowed || g.Policy.Decide("https://ads.test/").Allowed || g.Instructions != "hi" {
		t.Error("an inheriting group must decide by the top level's lists")
	}
	runtime.KeepAlive(s)
}

// TestGroupInheritsOneList: a group that writes out one list shares the
// other with the top level.
func TestGroupInheritsOneList(t *testing.T) {
	s := mustParse(t, "allow: [a.test]\nblock: [x.a.test]\ngroupHeader: X-Group\ngroups:\n  b: {block: [b.a.test]}\n  a: {allow: [other.test]}\n")
	if g := s.Group("b"); !slices.Equal(g.Policy.Origins(), []string{"a.test"}) || !slices.Equal(g.Policy.Blocked(), []string{"b.a.test"}) {
		t.Errorf("own block: allow %v block %v", g.Policy.Origins(), g.Policy.Blocked())
	}
	if g := s.Group("a"); !slices.Equal(g.Policy.Origins(), []string{"other.test"}) || !slices.Equal(g.Policy.Blocked(), []string{"x.a.test"}) {
		t.Errorf("own allow: allow %v block %v", g.Policy.Origins(), g.Policy.Blocked())
	}
}

// TestMaxEntries: a file over MaxEntries is refused as invalid, naming
// the bound, before it is compiled; one at the bound is not. Lists a group
// inherits are not counted again.
func TestMaxEntries(t *testing.T) {
	entries := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%x.t,", i)
		}
		return b.String()
	}
	half := entries(MaxEntries / 2)
	at := "allow: \"" + half + "\"\nblock: \"" + half + "\"\ngroupHeader: X-Group\ngroups:\n  a: {}\n  b: {instructions: hi}\n"
	if _, err := Parse([]byte(at)); err != nil {
		t.Fatalf("a file of MaxEntries entries: %v", err)
	}
	over := "allow: \"" + half + "\"\ngroupHeader: X-Group\ngroups:\n  a: {block: \"" + half + "\"}\n  b: {block: [one.more.t]}\n"
	_, err := Parse([]byte(over))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "MaxEntries") || !strings.Contains(err.Error(), fmt.Sprint(MaxEntries)) {
		t.Fatalf("a file of MaxEntries+1 entries: %v, want a refusal naming MaxEntries", err)
	}
}

// TestCompareLarge checks the reload diff of large lists, and of groups
// that inherit the top level's list or write out their own.
func TestCompareLarge(t *testing.T) {
	const n = 5000 // BenchmarkCompare runs 74,000
	old := mustParse(t, bigFile(n, 3, nil)+"  own: {allow: [o1.test, o2.test]}\n")
	new := mustParse(t, bigFile(n, 3, map[int]bool{5: true, 4000: true}, "added.test")+"  own: {allow: [o2.test, o3.test]}\n")
	d := Compare(old, new)
	byGroup := map[string]GroupChange{}
	for _, c := range d.Changes {
		byGroup[c.Group] = c
	}
	if len(d.Changes) != 5 {
		t.Errorf("%d groups changed, want 5: %v", len(d.Changes), d)
	}
	for _, g := range []string{"", "g0", "g1", "g2"} {
		c := byGroup[g]
		if !slices.Equal(c.Added, []string{"allow added.test"}) || !slices.Equal(c.Removed, []string{"allow x5.t", "allow x4000.t"}) {
			t.Errorf("group %q: +%v -%v", g, c.Added, c.Removed)
		}
	}
	if c := byGroup["own"]; !slices.Equal(c.Added, []string{"allow o3.test"}) || !slices.Equal(c.Removed, []string{"allow o1.test"}) {
		t.Errorf("group own: +%v -%v", c.Added, c.Removed)
	}
	// A group that stops inheriting is compared list against list.
	mixed := mustParse(t, bigFile(10, 1, nil)+"  g1: {allow: [x1.t]}\n")
	plain := mustParse(t, bigFile(10, 2, nil))
	if c := Compare(plain, mixed).Changes; len(c) != 1 || c[0].Group != "g1" || len(c[0].Removed) != 10 || len(c[0].Added) != 0 {
		t.Errorf("a group that names its own allow: %+v", c)
	}
	if !Compare(new, new).Empty() {
		t.Error("a large Set compared with itself must be no change")
	}
	// The log line stays short however much changed.
	all := mustParse(t, "allow: [home.test]\n")
	if s := Compare(old, all).String(); len(s) > 2000 || !strings.Contains(s, "more") {
		t.Errorf("the diff of a whole list is %d bytes: %.200s", len(s), s)
	}
}

// TestWorstCompiledSize: a file at MaxBytes of the shapes that compile to
// the most per byte (groups that each write out one entry, or an empty
// list, or nothing) stays under the documented bound of about 30 MiB
// compiled: MaxEntries bounds entries, MaxBytes the groups (measured: 27,
// 13 and 6 MiB).
func TestWorstCompiledSize(t *testing.T) {
	for _, group := range []string{"  g%d: {allow: [a%[1]d.t]}\n", "  g%d: {block: []}\n", "  g%d: {}\n"} {
		var b strings.Builder
		b.WriteString("allow: [a.t]\ngroupHeader: X-G\ngroups:\n")
		for i := 0; b.Len() < MaxBytes-100; i++ {
			fmt.Fprintf(&b, group, i)
		}
		data := []byte(b.String())
		kept, v := retained(func() any {
			s, err := Parse(data)
			if err != nil {
				t.Fatalf("%q: %v", group, err)
			}
			return s
		})
		s := v.(*Set)
		t.Logf("%q: a %d-byte file of %d groups keeps %d MiB compiled", group, len(data), len(s.groups), kept>>20)
		if kept > 32<<20 {
			t.Errorf("%q: the compiled file keeps %d MiB; want under 32 MiB", group, kept>>20)
		}
		runtime.KeepAlive(s)
	}
}
