package policyfile

import (
	"errors"
	"sort"

	"github.com/cdpguard/cdpguard/internal/policy"
)

// Group is one group's compiled policy: its allow and block lists and the
// instructions shown with them. Name is "" for the top level (the default
// group). It is immutable.
type Group struct {
	Name         string
	Policy       *policy.Policy
	Instructions string
	// ownAllow and ownBlock say the group wrote the list out; a group
	// without it shares the top level's (and Compare reuses its diff).
	ownAllow, ownBlock bool
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
	return &Set{def: &Group{Policy: p, Instructions: instructions, ownAllow: true, ownBlock: true}, unknown: UnknownDefault}
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
