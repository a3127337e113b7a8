package policystate

import (
	"strings"

	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/policyfile"
)

// Source is where the starting policy comes from: the policy file when
// File is set (then Allow, Block and Instructions must be empty: the file
// is the one source), else Allow, Block and Instructions.
type Source struct {
	File          string
	Allow, Block  []string
	Instructions  string
	SessionHeader string // the groupHeader of a policy file must differ from it
}

// FieldError names the Source field that cannot be used as it is set.
type FieldError struct {
	Field  string // Allow, Block, Instructions or PolicyFile
	Entry  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Entry + ": " + e.Reason }

// Load builds the starting policy from src; sum is the content hash of
// the file it was read from. Its errors are a *FieldError, a bad entry of
// Allow or Block (policy.Parse's), or the policy file's.
func Load(src Source) (*policyfile.Set, [32]byte, error) {
	if src.File == "" {
		p, err := policy.Parse(src.Allow, src.Block)
		if err != nil {
			return nil, [32]byte{}, err
		}
		return policyfile.Static(p, src.Instructions), [32]byte{}, nil
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"Allow", anyEntry(src.Allow)}, {"Block", anyEntry(src.Block)}, {"Instructions", strings.TrimSpace(src.Instructions) != ""}} {
		if f.set {
			return nil, [32]byte{}, &FieldError{Field: f.name, Reason: "set with PolicyFile (--policy-file): put allow, block and instructions in the policy file, its one source"}
		}
	}
	s, sum, err := policyfile.Read(src.File)
	if err != nil {
		return nil, [32]byte{}, err
	}
	if h := s.Header(); h != "" && strings.EqualFold(h, src.SessionHeader) {
		return nil, [32]byte{}, &FieldError{Field: "PolicyFile", Entry: h, Reason: "groupHeader must differ from the session header"}
	}
	return s, sum, nil
}

// anyEntry reports whether list holds anything but blanks (an empty
// ALLOWED_ORIGINS="" sets nothing, so it does not compete with the file).
func anyEntry(list []string) bool {
	for _, v := range list {
		if strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}
