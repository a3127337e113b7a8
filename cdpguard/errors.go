package cdpguard

import (
	"errors"
	"fmt"

	"github.com/cdpguard/cdpguard/internal/browser"
	"github.com/cdpguard/cdpguard/internal/hostmap"
	"github.com/cdpguard/cdpguard/internal/policy"
)

// The errors a Go program can tell apart with errors.Is and errors.As.
// Every error that stops Launch or Attach wraps ErrSetup; a bad
// configuration entry is also a *ConfigError, and a missing browser binary
// also wraps ErrNoBrowser. Errors after start-up (a lost browser) end the
// guard (Done) instead.
var (
	// ErrSetup is wrapped by every error that stops a guard from starting:
	// configuration, browser launch or attach, the egress proxy, the
	// guard's browser session, the listener.
	ErrSetup = errors.New("cdpguard: setup failed")
	// ErrNoBrowser is wrapped when Config.ChromePath does not name an
	// executable, or it is empty and no chromium, chromium-browser or
	// google-chrome is on PATH.
	ErrNoBrowser = browser.ErrBrowserNotFound
)

// ConfigError names the Config entry that stopped a guard from starting, so
// that a program can report it to whoever wrote it (an allowlist entry with a
// path, a --host-map rule without an address, a Chrome flag that would open a
// way around the guard). It is returned wrapped in ErrSetup.
type ConfigError struct {
	// Field is the Config field: Allow, Block, HostMap, AllowPrivate,
	// ChromeFlags, ServiceWorkers, BlockedNavigation, BrowserMessageBytes,
	// Instructions or PolicyFile.
	Field string
	// Entry is the offending entry as written: one element of a list field
	// (after splitting at ';', ',' and new lines), or the field's value.
	Entry string
	// Reason says what is wrong with it.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error formats as: invalid Allow entry "example.com/path": paths are not allowed.
func (e *ConfigError) Error() string {
	return fmt.Sprintf("invalid %s entry %q: %s", e.Field, e.Entry, e.Reason)
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// configError returns a ConfigError wrapped in ErrSetup.
func configError(field, entry, reason string) error {
	return fmt.Errorf("%w: %w", ErrSetup, &ConfigError{Field: field, Entry: entry, Reason: reason})
}

// setupError wraps err in ErrSetup (once), with what was being done, and
// turns the entry errors of the internal packages into a *ConfigError.
func setupError(doing string, err error) error {
	var (
		pe *policy.EntryError
		re *hostmap.RuleError
		fe *browser.FlagError
		ce *ConfigError
	)
	switch {
	case errors.As(err, &ce):
	case errors.As(err, &pe):
		field := "Allow"
		if pe.List == "block" {
			field = "Block"
		}
		ce = &ConfigError{Field: field, Entry: pe.Entry, Reason: pe.Reason, Err: err}
	case errors.As(err, &re):
		ce = &ConfigError{Field: "HostMap", Entry: re.Rule, Reason: re.Reason, Err: err}
	case errors.As(err, &fe):
		ce = &ConfigError{Field: "ChromeFlags", Entry: fe.Flag, Reason: fe.Reason, Err: err}
	}
	switch {
	case errors.Is(err, ErrSetup):
		return err
	case ce != nil:
		return fmt.Errorf("%w: %w", ErrSetup, ce)
	case doing != "":
		return fmt.Errorf("%w: %s: %w", ErrSetup, doing, err)
	default:
		return fmt.Errorf("%w: %w", ErrSetup, err)
	}
}
