package readpage

import (
	"fmt"
	"strings"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/rules"
)

// Policy is the policy in force as reads are judged by it: a read is
// refused before anything is sent to its host.
type Policy interface {
	// OfUser returns the policy of the user of key (their group's) and the
	// grants of their session (nil: none yet).
	OfUser(key string) (*policy.Policy, *grants.Set)
	// OfPage returns them for the user whose context holds targetID.
	OfPage(targetID string) (*policy.Policy, *grants.Set)
	// Self turns an allowed decision for a URL addressed to the guard
	// itself into a refusal (fetchdomain.ReasonSelf).
	Self(d policy.Decision, url string) policy.Decision
}

// Refusal returns why url may not be read under p with the session grants
// granted (nil: none), naming the host and the reachable origins, or "".
// self (nil: none) refuses the guard's own addresses.
func Refusal(p *policy.Policy, granted *grants.Set, url string, self func(policy.Decision, string) policy.Decision) string {
	if msg := rules.URLRefusal("read", url); msg != "" {
		return strings.TrimPrefix(msg, "cdpguard: ")
	}
	if d := granted.Decide(p.Decide(url)); !d.Allowed {
		origins := "none (the allowlist is empty)"
		if o := p.Origins(); len(o) > 0 {
			origins = strings.Join(o, ", ")
		}
		return fmt.Sprintf("%s (%s); nothing was sent to it. Reachable origins: %s", d.Reason, clip.String(url), origins)
	}
	if self == nil {
		return ""
	}
	if d := self(p.Decide(url), url); !d.Allowed && d.Reason == fetchdomain.ReasonSelf {
		return fmt.Sprintf("%s (%s); nothing was sent to it", d.Reason, clip.String(url))
	}
	return ""
}

// userRefusal is Refusal for a read in the reader tab of the user of key.
func (r *Reader) userRefusal(key, url string) string {
	p, g := r.d.Policy.OfUser(key)
	return Refusal(p, g, url, r.d.Policy.Self)
}

// pageRefusal is Refusal for a read in page targetID, by whoever owns it.
func (r *Reader) pageRefusal(targetID, url string) string {
	p, g := r.d.Policy.OfPage(targetID)
	return Refusal(p, g, url, r.d.Policy.Self)
}
