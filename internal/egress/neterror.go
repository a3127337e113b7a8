package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// NetErrorPhrase begins the reason phrase of the proxy's own 502 for a
// plain-HTTP request it could not carry; the rest names the network error
// Chrome shows for that failure without a proxy, as a CDP
// Network.ErrorReason: "HTTP/1.1 502 cdpguard net error ConnectionRefused".
// Chrome shows a plain-HTTP proxy's error answer as the page, where direct
// it shows an error (net::ERR_CONNECTION_REFUSED): the Fetch judge
// (internal/fetchdomain) fails a response whose status says so with the
// reason it names, so the page, the agent and fetch() see the error they
// would see direct. The reason phrase, not a header: Chrome hides an
// opaque (no-cors) response's headers from the Fetch domain but not its
// status text. An upstream's status line that begins so is passed with the
// standard phrase instead, so a site cannot fail its own responses through
// it (docs/decisions/2026-12-07-egress-errors.md).
const NetErrorPhrase = "cdpguard net error "

// netErrorResponse is the proxy's 502 for a request it could not carry,
// naming reason in its status line (NetErrorPhrase) and target in its body.
func netErrorResponse(reason, body string) *http.Response {
	r := plainResponse(http.StatusBadGateway, body)
	r.Status = "502 " + NetErrorPhrase + reason
	return r
}

// forgedNetError reports whether an upstream's status carries the proxy's
// own NetErrorPhrase.
func forgedNetError(resp *http.Response) bool {
	_, reason, _ := strings.Cut(resp.Status, " ")
	return strings.HasPrefix(reason, NetErrorPhrase)
}

// errPolicyChanged is a dial refused because a policy reload while dialling
// no longer allows the host.
var errPolicyChanged = errors.New("the policy changed while dialling")

// netErrorReason maps the error of a failed upstream round trip to the
// Network.ErrorReason whose net error Chrome shows for it direct:
// refused ECONNREFUSED, reset ECONNRESET, timed out (the dial bound)
// TimedOut, unreachable AddressUnreachable, a connection closed before any
// response ConnectionClosed, anything else Failed.
func netErrorReason(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "Failed"
	case errors.Is(err, errPolicyChanged):
		return "BlockedByClient"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "ConnectionRefused"
	case errors.Is(err, syscall.ECONNRESET):
		return "ConnectionReset"
	case errors.Is(err, syscall.ECONNABORTED):
		return "ConnectionAborted"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "AddressUnreachable"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "TimedOut"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "ConnectionClosed"
	}
	return "Failed"
}
