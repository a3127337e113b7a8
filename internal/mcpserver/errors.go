package mcpserver

import (
	"errors"
	"fmt"
	"time"
)

// Sentinels for the kinds of tool errors; the typed errors below wrap them
// so that callers branch with errors.Is / errors.As, never on the text.
var (
	// ErrRefused: the guard's policy refused a URL (host or scheme).
	ErrRefused = errors.New("refused by the allowlist")
	// ErrTimeout: the call's bound (--mcp-call-timeout) ran out.
	ErrTimeout = errors.New("the call ran out of time")
	// ErrPage: the page failed (a script threw, a load failed).
	ErrPage = errors.New("the page failed")
	// ErrDialogOpen: a JavaScript dialog waits for browser_handle_dialog.
	ErrDialogOpen = errors.New("a dialog is open")
)

// RefusedError is a URL the policy refuses; its text is the sentence the
// model reads (host or scheme, reason, reachable origins).
type RefusedError struct {
	URL      string
	Host     string // "" when the scheme is refused
	Scheme   string // set when the scheme itself is refused
	Reason   string
	sentence string
}

func (e *RefusedError) Error() string { return e.sentence }
func (e *RefusedError) Unwrap() error { return ErrRefused }

// TimeoutError is a call that hit its bound; Doing names what did not
// finish and Hint what the model may do next.
type TimeoutError struct {
	Doing string
	After time.Duration
	Hint  string
}

func (e *TimeoutError) Error() string {
	s := fmt.Sprintf("%s did not finish within %s", e.Doing, roundDur(e.After))
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s + ". The call was abandoned; the browser is free for the next call."
}
func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// PageError is a failure inside the page: a script threw, a load failed.
// Err, when set, is the cause (a closed connection stays ErrClosed).
type PageError struct {
	Msg string
	Err error
}

func (e *PageError) Error() string { return e.Msg }
func (e *PageError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrPage, e.Err}
	}
	return []error{ErrPage}
}

// DialogOpenError is an action refused because a dialog waits on the tab.
type DialogOpenError struct{ D DialogInfo }

func (e *DialogOpenError) Error() string {
	return fmt.Sprintf("%s is open on this tab and blocks it; answer it first with browser_handle_dialog {accept: true|false, promptText?}", e.D.describe())
}
func (e *DialogOpenError) Unwrap() error { return ErrDialogOpen }

// DialogInfo describes one JavaScript dialog for the model.
type DialogInfo struct {
	Type, Message, DefaultPrompt string
}

// describe is "an alert dialog saying "…"" with the prompt's default.
func (d DialogInfo) describe() string {
	art := "a"
	if d.Type == "alert" {
		art = "an"
	}
	s := fmt.Sprintf("%s %s dialog saying %q", art, d.Type, clip(d.Message, 500))
	if d.Type == "prompt" {
		s += fmt.Sprintf(" (default answer %q)", clip(d.DefaultPrompt, 200))
	}
	return s
}

func roundDur(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%g s", d.Round(100*time.Millisecond).Seconds())
	}
	return d.Round(time.Millisecond).String()
}
