package policystate

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/policyfile"
)

// ErrGroupRefused is wrapped by the refusal of a request whose group the
// policy file does not define (unknownGroup: refuse), or whose group
// differs from the one its user's context was made for.
var ErrGroupRefused = errors.New("policy group refused")

// groupSep joins a user's session key and group in the user's key. No
// HTTP header value holds a NUL, so no session value can pose as another
// group's user.
const groupSep = "\x00"

// GroupKey returns the user key of session in group ("" is the default
// group, whose keys are the session value alone, as before groups).
func GroupKey(session, group string) string {
	if group == "" {
		return session
	}
	return session + groupSep + group
}

// GroupOfKey returns the group a user key was made for.
func GroupOfKey(key string) string {
	if i := strings.IndexByte(key, 0); i >= 0 {
		return key[i+1:]
	}
	return ""
}

// Live reports whether the user whose key is key has a browser context.
type Live func(key string) bool

// KeyOf returns the user key of an HTTP request: the value of its
// sessionHeader and, when the policy has groups, the group its group
// header selects. A user's group is fixed while their context lives
// (live): a request naming another group for a session that already has a
// context is refused, not obeyed.
func (st *State) KeyOf(h http.Header, sessionHeader string, live Live) (string, error) {
	session := h.Get(sessionHeader)
	if strings.Contains(session, groupSep) {
		return "", fmt.Errorf("%w: the %s header holds a NUL byte", ErrGroupRefused, sessionHeader)
	}
	s := st.Rules()
	if !s.HasGroups() {
		return session, nil
	}
	value := h.Get(s.Header())
	group, err := s.Select(value)
	if err != nil {
		names := s.GroupNames()
		return "", fmt.Errorf("%w: %s %q names no group of the policy file (unknownGroup: refuse); the groups are %s", ErrGroupRefused, s.Header(), value, strings.Join(firstOf(names, maxLogged), ", "))
	}
	key := GroupKey(session, group)
	if err := OtherGroupLive(s, key, live); err != nil {
		return "", err
	}
	return key, nil
}

// OtherGroupLive refuses key when its session already has a context
// (live) in another group of s.
func OtherGroupLive(s *policyfile.Set, key string, live Live) error {
	if live == nil || !s.HasGroups() {
		return nil
	}
	session, group, _ := strings.Cut(key, groupSep)
	for _, other := range append([]string{""}, s.GroupNames()...) {
		if other != group && live(GroupKey(session, other)) {
			return fmt.Errorf("%w: this user's browser context belongs to group %q; a user's group is fixed for the life of the context (close it, or wait for it to idle out, to change group)", ErrGroupRefused, displayGroup(other))
		}
	}
	return nil
}

func displayGroup(g string) string {
	if g == "" {
		return "(default)"
	}
	return g
}

// ForFrame returns the policy and instructions of the user whose tab holds
// frameID (the Fetch judge's view). Without groups it is one atomic load;
// with them, the frame's owner is looked up (owner; a frame nobody owns,
// such as a tab in Chrome's default context, gets the default group).
func (st *State) ForFrame(frameID string, owner func(frameID string) (key string, ok bool)) (*policy.Policy, string) {
	s := st.Rules()
	grp := s.Default()
	if s.HasGroups() && frameID != "" {
		if key, ok := owner(frameID); ok {
			grp = s.Group(GroupOfKey(key))
		}
	}
	return grp.Policy, grp.Instructions
}
