package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
)

// Scope is how ServeScoped judges one listener's connections: with its own
// DecideFunc, so one proxy can tell the browser contexts of different
// users apart by the port Chrome was pointed at.
type Scope struct {
	// Decide judges host and port for this listener; nil refuses all.
	Decide DecideFunc
	// Tag is copied into every Refusal of this listener's connections
	// (the guard puts its user's session there).
	Tag any
	// AllowAddrs, if set, replaces Options.AllowAddrs for this listener
	// (the IP entries of this user's own policy group).
	AllowAddrs func(netip.Addr) bool
}

// scope is a running ServeScoped listener.
type scope struct {
	decide     DecideFunc
	tag        any
	allowAddrs func(netip.Addr) bool // nil: Options.AllowAddrs
	// ended is set, under the tracker's lock, once the scope's listener
	// has closed: a tunnel whose dial was still in progress then is
	// closed instead of registered (the session it was for is over).
	ended bool
}

// scopeOf returns the scope of the client connection that carries ctx's
// request, or nil for Serve's listeners.
func scopeOf(ctx context.Context) *scope {
	if tc, ok := ctx.Value(clientConnKey{}).(*trackedConn); ok {
		return tc.scope
	}
	return nil
}

// ServeScoped accepts proxy connections on l like Serve, but judges them
// with s.Decide instead of Options.Decide (nil refuses everything) and tags
// their refusals with s.Tag.
// Everything else is shared with the proxy's other listeners: the address
// checks, the host map, the transport, and the refusal of every listener's
// own address as a destination (so one scope cannot reach another scope's
// port through itself). When l is closed, ServeScoped closes every client
// connection accepted on it and every tunnel dialled for them, and returns
// nil; Close ends it too.
func (p *Proxy) ServeScoped(l net.Listener, s Scope) error {
	decide := s.Decide
	if decide == nil {
		decide = func(string, int) (bool, string) { return false, "no policy configured" }
	}
	sc := &scope{decide: decide, tag: s.Tag, allowAddrs: s.AllowAddrs}
	ap, aerr := netip.ParseAddrPort(l.Addr().String())
	if aerr == nil {
		p.self.Add(ap)
	}
	err := p.srv.Serve(trackingListener{Listener: l, t: &p.conns, scope: sc})
	p.conns.closeScope(sc)
	if aerr == nil {
		p.self.Remove(ap)
	}
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("egress: serve: %w", err)
}
