package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// connKind tells tracked connections apart for Stats.
type connKind int

const (
	kindClient connKind = iota // accepted from the browser
	kindTunnel                 // dialled for a CONNECT tunnel
	kindHTTP                   // dialled by the transport for plain HTTP
)

// tracker owns every connection the proxy accepts or dials, so that Close
// can end them all: a stopped guard must leave nothing flowing, and hijacked
// connections are invisible to http.Server.Close.
type tracker struct {
	mu     sync.Mutex
	closed bool
	conns  map[*trackedConn]connKind
	// dialledEnds counts the (local, remote) address pairs of the
	// connections the proxy dialled (tunnels and plain HTTP), for
	// Proxy.Dialled. The pair, not the local address alone: Linux gives
	// connections to different destinations the same local port.
	dialledEnds map[connEnds]int
}

// connEnds is a TCP connection's two addresses, as its dialler sees them.
type connEnds struct{ local, remote netip.AddrPort }

// add registers c, or closes it and returns false when the tracker is
// already closed or c's scope has ended.
func (t *tracker) add(c *trackedConn, kind connKind) bool {
	t.mu.Lock()
	if t.closed || (c.scope != nil && c.scope.ended) {
		t.mu.Unlock()
		_ = c.Conn.Close()
		return false
	}
	if t.conns == nil {
		t.conns = make(map[*trackedConn]connKind)
		t.dialledEnds = make(map[connEnds]int)
	}
	t.conns[c] = kind
	if e, ok := endsOf(c, kind); ok {
		t.dialledEnds[e]++
	}
	t.mu.Unlock()
	return true
}

func (t *tracker) remove(c *trackedConn) {
	t.mu.Lock()
	if kind, ok := t.conns[c]; ok {
		if e, ok := endsOf(c, kind); ok {
			if t.dialledEnds[e]--; t.dialledEnds[e] <= 0 {
				delete(t.dialledEnds, e)
			}
		}
	}
	delete(t.conns, c)
	t.mu.Unlock()
}

// endsOf is the two addresses of a connection the proxy dialled; ok is
// false for accepted ones.
func endsOf(c *trackedConn, kind connKind) (connEnds, bool) {
	if kind == kindClient {
		return connEnds{}, false
	}
	l, lok := c.Conn.LocalAddr().(*net.TCPAddr)
	r, rok := c.Conn.RemoteAddr().(*net.TCPAddr)
	if !lok || !rok {
		return connEnds{}, false
	}
	return connEnds{local: unmapAP(l.AddrPort()), remote: unmapAP(r.AddrPort())}, true
}

func unmapAP(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())
}

// dialled reports whether a live connection the proxy dialled runs from
// local to remote.
func (t *tracker) dialled(local, remote netip.AddrPort) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dialledEnds[connEnds{local: unmapAP(local), remote: unmapAP(remote)}] > 0
}

func (t *tracker) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// count returns how many open connections of kind there are.
func (t *tracker) count(kind connKind) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, k := range t.conns {
		if k == kind {
			n++
		}
	}
	return n
}

// closeAll marks the tracker closed and closes every live connection.
func (t *tracker) closeAll() {
	t.mu.Lock()
	t.closed = true
	conns := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// closeScope ends scope sc: it closes every live connection of sc, and add
// refuses the ones whose dial finishes later.
func (t *tracker) closeScope(sc *scope) {
	t.mu.Lock()
	sc.ended = true
	var conns []*trackedConn
	for c := range t.conns {
		if c.scope == sc {
			conns = append(conns, c)
		}
	}
	t.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// trackedConn removes itself from its tracker when closed. It forwards
// half-close so goproxy keeps using its half-closing tunnel copy (the other
// copy path writes error pages into established tunnels).
type trackedConn struct {
	net.Conn
	t    *tracker
	once sync.Once
	err  error
	// scope is the ServeScoped listener the connection came through (a
	// client connection) or was dialled for (a tunnel); nil for Serve's.
	scope *scope
	// host and port are what a tunnel was judged for, so Recheck can judge
	// it again under a new policy; "" for other connections.
	host string
	port int
	// client marks a connection accepted from the browser; swap is the
	// upstream status its next response line carries (status.go).
	client bool
	swap   statusSwap
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.err = c.Conn.Close()
		c.t.remove(c)
	})
	return c.err
}

// errNoHalfClose is returned by CloseWrite/CloseRead on connections that
// cannot half-close.
var errNoHalfClose = errors.New("connection cannot half-close")

func (c *trackedConn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return errNoHalfClose
}

func (c *trackedConn) CloseRead() error {
	if hc, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return hc.CloseRead()
	}
	return errNoHalfClose
}

// trackingListener registers every accepted connection.
type trackingListener struct {
	net.Listener
	t     *tracker
	scope *scope // nil for Serve's listeners
}

func (l trackingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, t: l.t, scope: l.scope, client: true}
		if l.t.add(tc, kindClient) {
			return tc, nil
		}
		// Closed: the connection was closed by add; the server is shutting
		// down and its next Accept fails too.
	}
}

// checkedKey carries a request's checked addresses to the dialer.
type checkedKey struct{}

// checked is what the judge hands to the dialer: the name it judged and the
// only addresses the dialer may use for it.
type checked struct {
	name  string // host:port as judged (dial address must equal it)
	addrs []netip.AddrPort
	kind  connKind
	scope *scope // the client's ServeScoped listener, if any
	host  string // the judged host and port, for Recheck
	port  int
	gen   uint64 // Proxy.policyGen when the host was judged
}

// ErrUncheckedDial is returned when a dial is attempted without, or
// differently from, an address the judge checked. It indicates a bug, never
// a policy decision, and the dial is refused.
var ErrUncheckedDial = errors.New("egress: dial without a checked address")

// ErrClosed is returned by dials after Close.
var ErrClosed = errors.New("egress: proxy closed")

// dialChecked dials the first reachable address of ck, never resolving a
// name: the addresses were resolved and checked once by the judge.
func (p *Proxy) dialChecked(ctx context.Context, ck *checked, addr string) (net.Conn, error) {
	if ck == nil || addr != ck.name || len(ck.addrs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrUncheckedDial, addr)
	}
	if p.conns.isClosed() {
		return nil, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
	defer cancel()
	var errs []error
	for _, ap := range ck.addrs {
		c, err := p.dial(ctx, "tcp", ap.String())
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		tc := &trackedConn{Conn: c, t: &p.conns}
		if ck.kind == kindTunnel {
			tc.scope = ck.scope // pooled plain-HTTP connections are nobody's
			tc.host, tc.port = ck.host, ck.port
		}
		if !p.conns.add(tc, ck.kind) {
			return nil, ErrClosed
		}
		// A Recheck that listed the tunnels while this dial was under way
		// did not see it: judge it again by the policy now in force.
		if ck.kind == kindTunnel && p.policyGen.Load() != ck.gen && !p.stillAllowed(ck) {
			_ = tc.Close()
			return nil, fmt.Errorf("egress: dial %s: %w and no longer allows %s", addr, errPolicyChanged, ck.host)
		}
		return tc, nil
	}
	return nil, fmt.Errorf("egress: dial %s: %w", addr, errors.Join(errs...))
}

// transportDial is the http.Transport dialer for plain HTTP: the request
// context carries the checked addresses.
func (p *Proxy) transportDial(ctx context.Context, network, addr string) (net.Conn, error) {
	ck, _ := ctx.Value(checkedKey{}).(*checked)
	return p.dialChecked(ctx, ck, addr)
}
