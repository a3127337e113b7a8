// Package grants holds the hosts a human allowed for one session with the
// controls' "Allow <host> for this session" button. A Set is an overlay on
// the operator's policy: it turns a "not in the allowlist" verdict into an
// allowed one for its hosts, and never overrides a --block entry. The
// policy itself stays immutable (internal/policy.Decide is pure); grants
// live in memory only, one Set per user session, and end with it.
package grants

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cdpguard/cdpguard/internal/policy"
)

// ErrInvalidHost is wrapped by Normalize's errors.
var ErrInvalidHost = errors.New("invalid host for a grant")

// Grant is one host allowed for a session.
type Grant struct {
	Host string    `json:"host"` // normalised host name
	Via  string    `json:"via"`  // how it was made, e.g. "controls"
	At   time.Time `json:"at"`   // when it was made
}

// maxHost bounds a host name (DNS allows 253 characters).
const maxHost = 253

// Normalize returns host in the policy's canonical form (lower case, IDNA
// to punycode, trailing dot removed). Only host names can be granted: IP
// literals, ports, schemes, paths, wildcards and empty or malformed names
// are errors wrapping ErrInvalidHost, since a grant is meant for the site a
// human read on the explanation page, and addresses would open loopback and
// private networks to the proxy.
func Normalize(host string) (string, error) {
	switch {
	case host == "":
		return "", fmt.Errorf("%w: empty", ErrInvalidHost)
	case len(host) > maxHost:
		return "", fmt.Errorf("%w: longer than %d characters", ErrInvalidHost, maxHost)
	case strings.ContainsAny(host, "/:@*?#[]\\ %"):
		return "", fmt.Errorf("%w %q: want a bare host name (no scheme, port, path, wildcard or address)", ErrInvalidHost, host)
	}
	n, err := policy.NormalizeHost(host)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidHost, err)
	}
	if _, err := netip.ParseAddr(n); err == nil {
		return "", fmt.Errorf("%w %q: IP addresses cannot be granted, only host names", ErrInvalidHost, host)
	}
	if !strings.Contains(n, ".") && n != "localhost" {
		// A single label is a host on the local network ("intranet",
		// "router"); a human cannot tell from the page where it goes.
		return "", fmt.Errorf("%w %q: a single-label name cannot be granted", ErrInvalidHost, host)
	}
	if n == "localhost" || strings.HasSuffix(n, ".localhost") {
		return "", fmt.Errorf("%w %q: localhost cannot be granted", ErrInvalidHost, host)
	}
	return n, nil
}

// Set is one session's grants. Its zero value is empty and ready; a nil
// *Set is empty too. Safe for concurrent use.
type Set struct {
	mu     sync.RWMutex
	grants map[string]Grant
	closed bool
}

// Add grants host (already normalised) and reports whether it was new; a
// host granted twice keeps its first record. A closed Set (its session
// ended) refuses with an error.
func (s *Set) Add(host, via string, at time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, errors.New("the session has ended")
	}
	if _, ok := s.grants[host]; ok {
		return false, nil
	}
	if s.grants == nil {
		s.grants = map[string]Grant{}
	}
	s.grants[host] = Grant{Host: host, Via: via, At: at}
	return true, nil
}

// Has reports whether host (normalised) is granted.
func (s *Set) Has(host string) bool {
	if s == nil || host == "" {
		return false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.grants[host]
	return ok
}

// List returns the grants, oldest first (then by host).
func (s *Set) List() []Grant {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	out := make([]Grant, 0, len(s.grants))
	for _, g := range s.grants {
		out = append(out, g)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Grant) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Host, b.Host)
	})
	return out
}

// Hosts returns the granted hosts, oldest first.
func (s *Set) Hosts() []string {
	l := s.List()
	out := make([]string, len(l))
	for i, g := range l {
		out[i] = g.Host
	}
	return out
}

// Close empties the Set and makes later Adds fail: the session ended.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	s.grants = nil
	s.mu.Unlock()
}

// Decide overlays the grants on a policy decision: a refusal for a host
// that is not on the allowlist becomes an allowance when the host is
// granted. Refusals by a --block entry (Decision.Rule is set on a refusal
// only when a block entry decided), malformed URLs and schemes that never
// touch the network stay refused, and allowances are returned unchanged.
func (s *Set) Decide(d policy.Decision) policy.Decision {
	if d.Allowed || d.Rule != "" || d.Host == "" || !s.Has(d.Host) {
		return d
	}
	return policy.Decision{Allowed: true, Reason: "granted for this session: " + d.Host, Host: d.Host}
}
