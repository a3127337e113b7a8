package isolation

import (
	"errors"
	"fmt"

	"github.com/cdpguard/cdpguard/internal/users"
)

// Names of the per-user caps, as in CapError.Cap and the metrics label.
const (
	CapTabs     = "tabs"
	CapContexts = "contexts"
)

// ErrCap is wrapped by every refusal of a per-user cap.
var ErrCap = errors.New("per-user cap")

// CapError is a refusal of a per-user cap: which cap, its limit, and the
// flag that sets it, so that the agent (and the MCP tool reporting it) can
// name it.
type CapError struct {
	Cap   string // CapTabs or CapContexts
	Limit int
	Flag  string
}

func (e *CapError) Error() string {
	return fmt.Sprintf("per-user cap: this user already has %d open %s, the most one user may have (%s)", e.Limit, e.Cap, e.Flag)
}

// Unwrap returns ErrCap.
func (e *CapError) Unwrap() error { return ErrCap }

// CheckTabs returns a *CapError when u is at its tab cap (Target.createTarget,
// /json/new, the reader's own tab), or a *users.CapError when all users
// together hold as many tabs as they may (users.Registry.CheckTabsInAll,
// which counts it).
func (i *Isolator) CheckTabs(u *users.User) error {
	if err := i.o.Users.CheckTabsInAll(); err != nil {
		return err
	}
	if i.o.MaxTabs <= 0 || i.o.Users.Tabs(u) < i.o.MaxTabs {
		return nil
	}
	return i.capped(CapTabs, i.o.MaxTabs, "--max-tabs-per-user")
}

// OverTabs reports whether u has more tabs than the cap: a tab that
// appeared past the pre-check (a popup, concurrent creates) is closed.
func (i *Isolator) OverTabs(u *users.User) bool {
	return i.o.MaxTabs > 0 && i.o.Users.Tabs(u) > i.o.MaxTabs
}

// CheckContexts returns a *CapError when u may not create another browser
// context, or a *users.CapError when all users together hold as many as
// they may (users.Registry.CheckContextsInAll, which counts it).
func (i *Isolator) CheckContexts(u *users.User) error {
	if err := i.o.Users.CheckContextsInAll(); err != nil {
		return err
	}
	if i.o.MaxContexts <= 0 || i.o.Users.CreatedContexts(u) < i.o.MaxContexts {
		return nil
	}
	return i.capped(CapContexts, i.o.MaxContexts, "--max-contexts-per-user")
}

func (i *Isolator) capped(name string, limit int, flag string) error {
	if i.o.OnCap != nil {
		i.o.OnCap(name)
	}
	return &CapError{Cap: name, Limit: limit, Flag: flag}
}
