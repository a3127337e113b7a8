package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
)

// NetErrorHeader names, on the proxy's own 502 for a plain-HTTP request it
// could not carry, the network error Chrome shows for that failure without
// a proxy, as a CDP Network.ErrorReason ("ConnectionRefused",
// "NameNotResolved", ...). Chrome shows a plain-HTTP proxy's error answer
// as the page, where direct it shows an error (net::ERR_CONNECTION_REFUSED):
// the Fetch judge (internal/fetchdomain) fails a response that carries this
// header with the reason it names, so the page, the agent and fetch() see
// the error they would see direct. An upstream response's own header of
// this name is removed, so a site cannot fail its own responses through it
// (docs/decisions/2026-12-07-egress-errors.md).
const NetErrorHeader = "X-Cdpguard-Net-Error"

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
