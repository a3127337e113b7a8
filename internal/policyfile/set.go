package policyfile

import (
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/cdpguard/cdpguard/internal/policy"
)

// Group is one group's compiled policy: its allow and block lists and the
// instructions shown with them. Name is "" for the top level (the default
// group). It is immutable.
type Group struct {
	Name         string
	Policy       *policy.Policy
	Instructions string
}

// Set is a compiled policy file: the default group, the named groups and
// how a request selects one. It is immutable and safe for concurrent use;
// the guard holds the one in force behind an atomic pointer, so a decision
// reads one consistent Set and a reload never changes one mid-decision.
type Set struct {
	def     *Group
	groups  map[string]*Group
	header  string
	unknown string
}

// ErrUnknownGroup is returned by [Set.Select] when the request names no
// group the file defines and the file says unknownGroup: refuse.
var ErrUnknownGroup = errors.New("unknown policy group")

// Static returns a Set with only a default group: the policy of --allow,
// --block and --instructions when no file is given.
func Static(p *policy.Policy, instructions string) *Set {
	return &Set{def: &Group{Policy: p, Instructions: instructions}, unknown: UnknownDefault}
}

// compile builds a group from sp, taking the keys sp leaves out from
// parent.
func compile(name string, sp, parent spec) (*Group, error) {
	if !sp.hasAllow {
		sp.allow = parent.allow
	}
	if !sp.hasBlock {
		sp.block = parent.block
	}
	if !sp.hasInstructions {
		sp.instructions = parent.instructions
	}
	p, err := policy.Parse(sp.allow, sp.block)
	if err != nil { // entries were validated one by one; a whole-list error is unexpected
		return nil, &Error{Entry: name, Reason: err.Error()}
	}
	return &Group{Name: name, Policy: p, Instructions: sp.instructions}, nil
}

// Default returns the top level's group.
func (s *Set) Default() *Group { return s.def }

// Header is the request header that selects a group; "" when the file has
// no groups.
func (s *Set) Header() string { return s.header }

// RefusesUnknown reports whether a user of an unknown group is refused.
func (s *Set) RefusesUnknown() bool { return s.unknown == UnknownRefuse }

// HasGroups reports whether the file names groups.
func (s *Set) HasGroups() bool { return len(s.groups) > 0 }

// GroupNames returns the named groups, sorted.
func (s *Set) GroupNames() []string {
	names := make([]string, 0, len(s.groups))
	for n := range s.groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Select returns the name of the group a request whose group header holds
// value selects: "" (the default group) when the file has no groups or the
// value names none and unknown groups get the default, else
// [ErrUnknownGroup] (a missing header is an unknown group too).
func (s *Set) Select(value string) (string, error) {
	if len(s.groups) == 0 {
		return "", nil
	}
	if _, ok := s.groups[value]; ok {
		return value, nil
	}
	if s.unknown == UnknownRefuse {
		return "", ErrUnknownGroup
	}
	return "", nil
}

// Group returns the group called name, the default group for "". A name
// the Set no longer defines (a group removed by a reload while its users'
// contexts live on) gets the default group, or an empty policy that
// refuses everything when the file refuses unknown groups: a user never
// keeps a removed group's wider list.
func (s *Set) Group(name string) *Group {
	if name == "" {
		return s.def
	}
	if g, ok := s.groups[name]; ok {
		return g
	}
	if s.unknown == UnknownRefuse {
		return &Group{Name: name, Instructions: "Your group is no longer configured; ask the operator."}
	}
	return s.def
}

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

// Compare returns what changed from old to new.
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
	sort.Strings(sorted)
	for _, n := range sorted {
		og, oOK := old.lookup(n)
		ng, nOK := new.lookup(n)
		c := GroupChange{Group: n, New: !oOK && nOK, Gone: oOK && !nOK}
		var oa, ob, na, nb []string
		oi, ni := "", ""
		if oOK {
			oa, ob, oi = og.Policy.Origins(), og.Policy.Blocked(), og.Instructions
		}
		if nOK {
			na, nb, ni = ng.Policy.Origins(), ng.Policy.Blocked(), ng.Instructions
		}
		c.Added = append(minus("allow ", na, oa), minus("block ", nb, ob)...)
		c.Removed = append(minus("allow ", oa, na), minus("block ", ob, nb)...)
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

// minus returns prefix+x for every x of a not in b.
func minus(prefix string, a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, prefix+x)
		}
	}
	return out
}

// Empty reports whether nothing changed.
func (d Diff) Empty() bool { return len(d.Changes) == 0 }

// String is the reload's one log line's detail, e.g.
// `default: +allow a.example -allow b.example; group staff: new`.
func (d Diff) String() string {
	if d.Empty() {
		return "no change"
	}
	parts := make([]string, 0, len(d.Changes))
	for _, c := range d.Changes {
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
		parts = append(parts, name+": "+strings.Join(items, " "))
	}
	return strings.Join(parts, "; ")
}
