package policyfile

import (
	"sort"
	"strconv"
	"strings"
)

// Diff is what a reload changed, per group.
type Diff struct {
	Changes []GroupChange
}

// GroupChange is one group's change; Added and Removed hold "allow X" and
// "block X" items.
type GroupChange struct {
	Group               string // "" for the default group
	New, Gone           bool   // the group appeared or disappeared
	Added, Removed      []string
	InstructionsChanged bool
}

// listDiff is what changed in one list: prefixed items added and removed.
type listDiff struct{ added, removed []string }

// Compare returns what changed from old to new. It takes time linear in
// the entries of both (sets, not nested loops: a 74,000-entry list is
// compared in milliseconds), and a list a group inherits from the top
// level in both Sets is not compared again: the group gets the top
// level's change to it.
func Compare(old, new *Set) Diff {
	var d Diff
	names := map[string]bool{"": true}
	for n := range old.groups {
		names[n] = true
	}
	for n := range new.groups {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted) // "" first: the default's diff is ready for the groups that inherit it
	var defAllow, defBlock listDiff
	for _, n := range sorted {
		og, oOK := old.lookup(n)
		ng, nOK := new.lookup(n)
		c := GroupChange{Group: n, New: !oOK && nOK, Gone: oOK && !nOK}
		var oa, ob, na, nb func() []string
		none := func() []string { return nil }
		oa, ob, na, nb = none, none, none, none
		oi, ni := "", ""
		if oOK {
			oa, ob, oi = og.Policy.Origins, og.Policy.Blocked, og.Instructions
		}
		if nOK {
			na, nb, ni = ng.Policy.Origins, ng.Policy.Blocked, ng.Instructions
		}
		inherits := n != "" && oOK && nOK
		var allow, block listDiff
		if inherits && !og.ownAllow && !ng.ownAllow {
			allow = defAllow
		} else {
			allow = diffLists("allow ", oa(), na())
		}
		if inherits && !og.ownBlock && !ng.ownBlock {
			block = defBlock
		} else {
			block = diffLists("block ", ob(), nb())
		}
		if n == "" {
			defAllow, defBlock = allow, block
		}
		c.Added = append(append([]string(nil), allow.added...), block.added...)
		c.Removed = append(append([]string(nil), allow.removed...), block.removed...)
		c.InstructionsChanged = oi != ni
		if c.New || c.Gone || len(c.Added) > 0 || len(c.Removed) > 0 || c.InstructionsChanged {
			d.Changes = append(d.Changes, c)
		}
	}
	if old.header != new.header || old.unknown != new.unknown {
		d.Changes = append(d.Changes, GroupChange{Group: "", Added: []string{"groupHeader " + new.header + ", unknownGroup " + new.unknown}})
	}
	return d
}

func (s *Set) lookup(name string) (*Group, bool) {
	if name == "" {
		return s.def, true
	}
	g, ok := s.groups[name]
	return g, ok
}

// diffLists returns prefix+x for every x of b not in a (added) and of a
// not in b (removed), in list order, in time linear in both.
func diffLists(prefix string, a, b []string) listDiff {
	var d listDiff
	d.added = minus(prefix, b, a)
	d.removed = minus(prefix, a, b)
	return d
}

// minus returns prefix+x for every x of a not in b.
func minus(prefix string, a, b []string) []string {
	in := make(map[string]struct{}, len(b))
	for _, x := range b {
		in[x] = struct{}{}
	}
	var out []string
	for _, x := range a {
		if _, ok := in[x]; !ok {
			out = append(out, prefix+x)
		}
	}
	return out
}

// Empty reports whether nothing changed.
func (d Diff) Empty() bool { return len(d.Changes) == 0 }

// Bounds of Diff.String, so a reload that replaces a 74,000-entry list, or
// changes what 2,000 groups inherit, still logs one line of a few kB.
const (
	maxItemsShown  = 10 // items shown per group
	maxGroupsShown = 20 // groups shown
)

// String is the reload's one log line's detail, e.g.
// `default: +allow a.example -allow b.example; group staff: new`. It shows
// at most 10 items a group and 20 groups, and says how many more.
func (d Diff) String() string {
	if d.Empty() {
		return "no change"
	}
	parts := make([]string, 0, min(len(d.Changes), maxGroupsShown+1))
	for i, c := range d.Changes {
		if i == maxGroupsShown {
			parts = append(parts, "and "+strconv.Itoa(len(d.Changes)-i)+" more groups changed")
			break
		}
		name := "default"
		if c.Group != "" {
			name = "group " + c.Group
		}
		var items []string
		switch {
		case c.New:
			items = append(items, "new")
		case c.Gone:
			items = append(items, "removed")
		}
		for _, a := range c.Added {
			items = append(items, "+"+a)
		}
		for _, r := range c.Removed {
			items = append(items, "-"+r)
		}
		if c.InstructionsChanged {
			items = append(items, "instructions changed")
		}
		if len(items) > maxItemsShown {
			items = append(items[:maxItemsShown], "(and "+strconv.Itoa(len(items)-maxItemsShown)+" more)")
		}
		parts = append(parts, name+": "+strings.Join(items, " "))
	}
	return strings.Join(parts, "; ")
}
