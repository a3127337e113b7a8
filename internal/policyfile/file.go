package policyfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxBytes bounds a policy file: a larger one is refused before it is
// parsed, so a runaway file cannot make every poll allocate without limit.
const MaxBytes = 1 << 20

// ErrInvalid is wrapped by every error about a file's content, so callers
// can tell a bad file (keep the policy in force) from a missing one.
var ErrInvalid = errors.New("invalid policy file")

// Error names where a policy file is wrong: the line (1-based, 0 when the
// whole file is at fault), the key or entry, and why.
type Error struct {
	Line   int
	Entry  string // the key or entry at fault, as written; "" when none
	Reason string
}

// Error formats as: line 3: allow entry "exa mple.com": spaces are not allowed.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Entry != "" {
		fmt.Fprintf(&b, "%q: ", e.Entry)
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns [ErrInvalid].
func (e *Error) Unwrap() error { return ErrInvalid }

// Unknown-group handling (the unknownGroup key).
const (
	UnknownDefault = "default" // a user of an unknown group gets the top level
	UnknownRefuse  = "refuse"  // a user of an unknown (or no) group is refused
)

// groupName is what a group may be called: it is matched against a header
// value, logged, and kept in a user's key.
var groupName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// headerName is an HTTP header field name (RFC 9110 token).
var headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")

// Parse reads a policy file's content. Decoding is strict: an unknown or
// repeated key, a value of the wrong kind, or an entry the policy language
// refuses is an [*Error] (wrapping [ErrInvalid]) naming its line.
func Parse(data []byte) (*Set, error) {
	if len(data) > MaxBytes {
		return nil, &Error{Reason: fmt.Sprintf("the file is %d bytes; the limit is %d", len(data), MaxBytes)}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Reason: "the file is empty; write at least allow: [] (an empty allowlist blocks everything)"}
		}
		line := yamlLine(err)
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d: ", line))
		return nil, &Error{Line: line, Reason: "not valid YAML: " + msg}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{Line: extra.Line, Reason: "more than one YAML document; write one"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{Line: root.Line, Reason: "the file must be a mapping with allow, block, instructions, groupHeader, unknownGroup and groups"}
	}
	s := &Set{unknown: UnknownDefault}
	var top spec
	var b budget
	var groupsNode *yaml.Node
	err := eachKey(root, func(key string, k, v *yaml.Node) error {
		switch key {
		case "allow", "block", "instructions":
			return top.set(key, k, v, &b)
		case "groupHeader":
			h, err := scalar(key, v)
			if err != nil {
				return err
			}
			if !headerName.MatchString(h) {
				return &Error{Line: v.Line, Entry: h, Reason: "groupHeader must be an HTTP header name"}
			}
			s.header = h
		case "unknownGroup":
			u, err := scalar(key, v)
			if err != nil {
				return err
			}
			if u != UnknownDefault && u != UnknownRefuse {
				return &Error{Line: v.Line, Entry: u, Reason: `unknownGroup must be "default" or "refuse"`}
			}
			s.unknown = u
		case "groups":
			if v.Kind != yaml.MappingNode {
				return &Error{Line: v.Line, Entry: key, Reason: "groups must be a mapping of group name to {allow, block, instructions}"}
			}
			groupsNode = v
		default:
			return &Error{Line: k.Line, Entry: key, Reason: "unknown key; the keys are allow, block, instructions, groupHeader, unknownGroup and groups"}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var specs []namedSpec
	if groupsNode != nil { // every entry is counted before anything is compiled
		if specs, err = readGroups(groupsNode, &b); err != nil {
			return nil, err
		}
	}
	if s.def, err = compileTop(top); err != nil {
		return nil, err
	}
	if groupsNode != nil {
		if s.groups, err = compileGroups(specs, s.def); err != nil {
			return nil, err
		}
	}
	switch {
	case len(s.groups) > 0 && s.header == "":
		return nil, &Error{Line: groupsNode.Line, Entry: "groups", Reason: "groups need groupHeader, the request header that selects a group"}
	case s.header != "" && len(s.groups) == 0:
		return nil, &Error{Entry: "groupHeader", Reason: "groupHeader is set but no groups are defined"}
	}
	return s, nil
}

// readGroups reads the groups mapping, counting entries against b.
func readGroups(n *yaml.Node, b *budget) ([]namedSpec, error) {
	var specs []namedSpec
	err := eachKey(n, func(name string, k, v *yaml.Node) error {
		if !groupName.MatchString(name) {
			return &Error{Line: k.Line, Entry: name, Reason: "a group name is 1 to 64 letters, digits, '.', '_', '@' or '-', starting with a letter or digit"}
		}
		if v.Kind != yaml.MappingNode {
			return &Error{Line: v.Line, Entry: name, Reason: "a group must be a mapping with allow, block and instructions"}
		}
		gs := namedSpec{name: name}
		if err := eachKey(v, func(key string, k, v *yaml.Node) error {
			switch key {
			case "allow", "block", "instructions":
				return gs.set(key, k, v, b)
			}
			return &Error{Line: k.Line, Entry: name + "." + key, Reason: "unknown key in a group; a group has allow, block and instructions"}
		}); err != nil {
			return err
		}
		specs = append(specs, gs)
		return nil
	})
	return specs, err
}

// namedSpec is a group's spec and its name, in file order.
type namedSpec struct {
	name string
	spec
}

// compileGroups compiles the groups read, each inheriting from the top
// level (top) the keys it leaves out.
func compileGroups(specs []namedSpec, top *Group) (map[string]*Group, error) {
	groups := make(map[string]*Group, len(specs))
	for _, gs := range specs {
		g, err := compileGroup(gs.name, gs.spec, top)
		if err != nil {
			return nil, err
		}
		groups[gs.name] = g
	}
	return groups, nil
}

// scalar returns v's text, or an error when v is not a plain value.
func scalar(key string, v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", &Error{Line: v.Line, Entry: key, Reason: "must be a single value"}
	}
	return v.Value, nil
}

// eachKey calls f for every key of the mapping m in order, refusing
// repeated keys, non-string keys and YAML merge keys (which would hide
// where a value came from).
func eachKey(m *yaml.Node, f func(key string, k, v *yaml.Node) error) error {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return &Error{Line: k.Line, Reason: "keys must be plain names (no merge keys or complex keys)"}
		}
		if first, ok := seen[k.Value]; ok {
			return &Error{Line: k.Line, Entry: k.Value, Reason: fmt.Sprintf("repeated key (first on line %d)", first)}
		}
		seen[k.Value] = k.Line
		if v.Kind == yaml.AliasNode {
			return &Error{Line: v.Line, Entry: k.Value, Reason: "aliases are not supported; write the value out"}
		}
		if err := f(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// yamlLine finds "line N" in a yaml error, 0 if none.
func yamlLine(err error) int {
	var n int
	msg := err.Error()
	if i := strings.Index(msg, "line "); i >= 0 {
		_, _ = fmt.Sscanf(msg[i:], "line %d", &n)
	}
	return n
}
