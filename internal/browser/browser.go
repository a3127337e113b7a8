// Package browser launches Chromium for cdpguard and connects to it.
//
// cdpguard holds exactly one connection to the browser. When it launches
// Chrome itself ([Launch]) that connection is --remote-debugging-pipe, so no
// CDP port exists for pages or local processes to find. When it guards a
// running browser ([Dial]) the connection is that browser's WebSocket.
// Either way the caller gets a [Conn]: whole JSON messages in and out.
package browser

import (
	"errors"
	"fmt"
)

// MaxMessageSize is the default bound on one message read from the browser
// (LaunchOptions.MaxMessage and Dial's maxMessage lower it), on the pipe and
// on the WebSocket alike. Screenshots and large evaluation results run to tens of
// MB; the bound only keeps a runaway message from exhausting memory. The
// pipe skips a larger message (oversize.go: an answer becomes a CDP error,
// a Fetch.requestPaused one the judge fails, another event is dropped); a
// WebSocket that sees one is unusable afterwards (its framing is lost), so
// reading fails with [ErrMessageTooLarge] from then on.
const MaxMessageSize = 256 << 20

// Sentinel errors a caller may need to tell apart with errors.Is.
var (
	// ErrBrowserNotFound means the Chrome binary given does not exist or is
	// not executable, or none was given and none of the default names is on
	// PATH.
	ErrBrowserNotFound = errors.New("chrome binary not found")
	// ErrMessageTooLarge means the browser sent a message over MaxMessageSize.
	ErrMessageTooLarge = errors.New("browser message exceeds the size limit")
	// ErrInvalidMessage means WriteMessage was given bytes that cannot be
	// framed safely (a NUL byte would end the message early on the pipe and
	// smuggle the rest in as a second command).
	ErrInvalidMessage = errors.New("message contains a NUL byte")
	// ErrClosed is returned by a Conn after Close.
	ErrClosed = errors.New("browser connection closed")
	// ErrForbiddenFlag is wrapped by a *FlagError.
	ErrForbiddenFlag = errors.New("chrome flag not allowed")
	// ErrStartup is wrapped by errors of Launch and Dial that happen after the
	// browser process or connection exists but before it answered.
	ErrStartup = errors.New("browser start-up failed")
)

// Conn is one raw CDP connection: whole JSON messages in, whole JSON messages out.
type Conn interface {
	// ReadMessage returns the next message from the browser (without the NUL
	// terminator for pipes). It returns an error (io.EOF or wrapped) once the
	// connection is gone; after that it keeps returning errors. It is meant
	// for one reading goroutine.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message; safe for concurrent use by several
	// goroutines (serialised internally).
	WriteMessage(msg []byte) error
	// Close closes the connection; reads and writes blocked in other
	// goroutines return. Idempotent.
	Close() error
}

// Version describes the browser, with the JSON names of Chrome's
// /json/version endpoint.
type Version struct {
	Browser              string `json:"Browser"`
	ProtocolVersion      string `json:"Protocol-Version"`
	UserAgent            string `json:"User-Agent"`
	V8Version            string `json:"V8-Version"`
	WebKitVersion        string `json:"WebKit-Version"`
	WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
}

// FlagError names a user-supplied Chrome flag that Launch refuses because it
// would open a way around cdpguard (a CDP port, a proxy bypass, an early
// start URL). It wraps ErrForbiddenFlag.
type FlagError struct {
	Flag   string
	Reason string
}

// Error implements error.
func (e *FlagError) Error() string {
	return fmt.Sprintf("chrome flag %q not allowed: %s", e.Flag, e.Reason)
}

// Unwrap returns ErrForbiddenFlag.
func (e *FlagError) Unwrap() error { return ErrForbiddenFlag }
