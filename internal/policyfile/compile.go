package policyfile

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/cdpguard/cdpguard/internal/policy"
)

// MaxEntries bounds the entries a policy file may hold in all: the top
// level's allow and block lists and every list a group writes out itself
// (a list a group leaves out is the top level's, shared, and not counted
// again). A compiled entry costs 180 to 300 bytes, so the bound keeps a
// compiled policy under about 30 MiB, whatever the groups; MaxBytes alone
// would allow twice that in short entries. 100,000 is more than a 1 MiB
// file of real host names holds (74,000 of 14 bytes). A file over it is
// refused like any bad file: the policy in force stays.
const MaxEntries = 100_000

// budget counts the entries a file has written so far against MaxEntries,
// so an oversize file is refused before anything is compiled.
type budget struct{ used int }

// take counts n more entries, the last on line.
func (b *budget) take(n, line int) error {
	b.used += n
	if b.used > MaxEntries {
		return &Error{Line: line, Reason: fmt.Sprintf("the file holds more than %d entries in all (the top level's and every group's own allow and block lists); the limit is MaxEntries, %d (about 30 MiB compiled)", MaxEntries, MaxEntries)}
	}
	return nil
}

// spec is one level of the file (the top level or a group) before compiling.
type spec struct {
	allow, block       []string
	hasAllow, hasBlock bool
	instructions       string
	hasInstructions    bool
}

// compileTop builds the top level's group.
func compileTop(sp spec) (*Group, error) {
	p, err := policy.Parse(sp.allow, sp.block)
	if err != nil { // entries were validated one by one; a whole-list error is unexpected
		return nil, &Error{Reason: err.Error()}
	}
	return &Group{Policy: p, Instructions: sp.instructions, ownAllow: true, ownBlock: true}, nil
}

// compileGroup builds a group from sp, taking the keys it leaves out from
// top, whose compiled lists it shares (policy.Compose) rather than
// compiling a copy: a thousand groups that only change the instructions
// cost a thousand small structs, not a thousand allowlists.
func compileGroup(name string, sp spec, top *Group) (*Group, error) {
	g := &Group{Name: name, Instructions: sp.instructions, ownAllow: sp.hasAllow, ownBlock: sp.hasBlock}
	if !sp.hasInstructions {
		g.Instructions = top.Instructions
	}
	if !sp.hasAllow && !sp.hasBlock {
		g.Policy = top.Policy
		return g, nil
	}
	own, err := policy.Parse(sp.allow, sp.block)
	if err != nil {
		return nil, &Error{Entry: name, Reason: err.Error()}
	}
	switch {
	case !sp.hasAllow:
		g.Policy = policy.Compose(top.Policy, own)
	case !sp.hasBlock:
		g.Policy = policy.Compose(own, top.Policy)
	default:
		g.Policy = own
	}
	return g, nil
}

// set records one of allow, block, instructions from v, counting entries
// against b.
func (sp *spec) set(key string, k, v *yaml.Node, b *budget) error {
	if key == "instructions" {
		text, err := scalar(key, v)
		if err != nil {
			return err
		}
		sp.instructions, sp.hasInstructions = strings.TrimSpace(text), true
		return nil
	}
	list, err := entries(key, v, b)
	if err != nil {
		return err
	}
	if key == "allow" {
		sp.allow, sp.hasAllow = list, true
	} else {
		sp.block, sp.hasBlock = list, true
	}
	return nil
}

// entries reads a list of policy entries (a sequence of strings, or one
// string holding entries separated as --allow's are) and validates each
// with internal/policy, so an error names the entry's own line.
func entries(list string, v *yaml.Node, b *budget) ([]string, error) {
	var items []*yaml.Node
	switch {
	case v.Kind == yaml.SequenceNode:
		items = v.Content
	case v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return []string{}, nil
	case v.Kind == yaml.ScalarNode:
		items = []*yaml.Node{v}
	default:
		return nil, &Error{Line: v.Line, Entry: list, Reason: "must be a list of entries"}
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		if it.Kind != yaml.ScalarNode || (it.Tag != "!!str" && it.Tag != "!!int" && it.Tag != "!!float") {
			return nil, &Error{Line: it.Line, Entry: list, Reason: "each entry must be a string (quote entries that start with '*')"}
		}
		n, err := policy.Validate(list, it.Value)
		if err != nil {
			var ee *policy.EntryError
			if errors.As(err, &ee) {
				return nil, &Error{Line: it.Line, Entry: ee.Entry, Reason: err.Error()}
			}
			return nil, &Error{Line: it.Line, Entry: it.Value, Reason: err.Error()}
		}
		if err := b.take(n, it.Line); err != nil {
			return nil, err
		}
		out = append(out, it.Value)
	}
	return out, nil
}
