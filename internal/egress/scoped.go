package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
)

// scope is one ServeScoped listener: the connections accepted on it are
// judged by its own DecideFunc, so one proxy can tell the browser contexts
// of different users apart by the port Chrome was pointed at.
type scope struct {
	decide DecideFunc
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
// with decide instead of Options.Decide (a nil decide refuses everything).
// Everything else is shared with the proxy's other listeners: the address
// checks, the host map, the transport, and the refusal of every listener's
// own address as a destination (so one scope cannot reach another scope's
// port through itself). When l is closed, ServeScoped closes every client
// connection accepted on it and every tunnel dialled for them, and returns
// nil; Close ends it too.
func (p *Proxy) ServeScoped(l net.Listener, decide DecideFunc) error {
	if decide == nil {
		decide = func(string, int) (bool, string) { return false, "no policy configured" }
	}
	sc := &scope{decide: decide}
	ap, aerr := netip.ParseAddrPort(l.Addr().String())
	if aerr == nil {
		ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		p.mu.Lock()
		p.listeners = append(p.listeners, ap)
		p.mu.Unlock()
	}
	err := p.srv.Serve(trackingListener{Listener: l, t: &p.conns, scope: sc})
	p.conns.closeScope(sc)
	if aerr == nil {
		p.forgetListener(ap)
	}
	if err == nil || errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("egress: serve: %w", err)
}

// forgetListener removes one entry for ap from the proxy's own addresses
// once its listener is gone.
func (p *Proxy) forgetListener(ap netip.AddrPort) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, l := range p.listeners {
		if l == ap {
			p.listeners = append(p.listeners[:i], p.listeners[i+1:]...)
			return
		}
	}
}
