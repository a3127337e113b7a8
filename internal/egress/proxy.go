// Package egress is cdpguard's egress proxy: the HTTP proxy the guarded
// Chromium is pointed at, so that traffic CDP's Fetch domain never sees
// (WebSocket handshakes, preconnects, Network.loadNetworkResource) is still
// judged by host and port. It resolves each name once, refuses loopback,
// private, link-local and similar addresses unless the operator named them,
// and dials exactly the addresses it checked, so DNS rebinding cannot move a
// connection after the check. It is built on github.com/elazarl/goproxy; see
// docs/decisions/2026-11-30-egress-proxy-library.md.
package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/cdpguard/cdpguard/internal/selfaddr"
)

// DecideFunc judges a normalised host (lower case, no trailing dot, IP
// literals canonical and without brackets) and port against the policy.
// A func type rather than an interface so that *policy.Policy's method can
// be adapted without this package importing internal/policy.
type DecideFunc func(host string, port int) (allowed bool, reason string)

// HostMapper maps operator-named hosts to fixed addresses; *hostmap.Map
// satisfies it. A mapped name's address counts as named by the operator, so
// private addresses are permitted for it.
type HostMapper interface {
	Lookup(host string) (netip.Addr, bool)
}

// Resolver resolves names; *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Options configures a Proxy. The zero value is safe: it refuses everything.
type Options struct {
	// Decide judges host and port; nil denies everything.
	Decide DecideFunc
	// HostMap is consulted before Resolver; nil maps nothing.
	HostMap HostMapper
	// AllowPrivate lists ranges in which loopback, private, link-local,
	// metadata and other non-public addresses are nevertheless permitted.
	AllowPrivate []netip.Prefix
	// AllowAddrs permits extra addresses (the allowlist's IP entries) even
	// when they are not public; nil permits none.
	AllowAddrs func(netip.Addr) bool
	// Resolver resolves names not in HostMap; nil means net.DefaultResolver.
	Resolver Resolver
	// DialTimeout bounds name resolution and each dial; 0 means 10s.
	DialTimeout time.Duration
	// Logger gets one line per refusal; nil discards.
	Logger *slog.Logger
	// OnRefuse, when set, is called synchronously for every refusal (for
	// Guard.requestBlocked events and metrics); keep it quick.
	OnRefuse func(Refusal)
	// Self is the set of the guard's own listening addresses, never a
	// destination; the proxy adds its listeners to it. Share it with the
	// Fetch judge so both layers agree on what "self" is. nil: the proxy
	// keeps a set of its own.
	Self *selfaddr.Set
}

// Refusal describes one refused proxy request.
type Refusal struct {
	Host   string     // normalised host, or the raw target when it could not be parsed
	Port   int        // 0 when unknown
	Addr   netip.Addr // the refused address, when the refusal was about one
	Reason string
	Method string // CONNECT, GET, ...
	Tag    any    // the Scope.Tag of the listener the request came through; nil for Serve's
}

// Stats are the proxy's counters.
type Stats struct {
	Allowed       uint64 // requests and tunnels let through
	Refused       uint64 // requests and tunnels refused
	ActiveTunnels int    // CONNECT tunnels currently open
}

// Proxy is the egress proxy. Create it with New, run it with Serve and stop
// it with Close.
type Proxy struct {
	opts         Options
	allowPrivate []netip.Prefix
	resolver     Resolver
	dialTimeout  time.Duration
	log          *slog.Logger
	dial         func(ctx context.Context, network, addr string) (net.Conn, error) // tests replace it to observe dials
	gp           *goproxy.ProxyHttpServer
	tr           *http.Transport
	srv          *http.Server
	conns        tracker

	allowed atomic.Uint64
	refused atomic.Uint64
	// policyGen counts Rechecks (policy reloads); a tunnel judged under
	// one generation and registered under another is judged again.
	policyGen atomic.Uint64

	self      *selfaddr.Set // our own addresses, never a destination
	closeOnce sync.Once
}

// ErrInvalidOptions is wrapped by New's errors.
var ErrInvalidOptions = errors.New("egress: invalid options")

const defaultDialTimeout = 10 * time.Second

// New builds a Proxy from opts.
func New(opts Options) (*Proxy, error) {
	if opts.DialTimeout < 0 {
		return nil, fmt.Errorf("%w: negative dial timeout", ErrInvalidOptions)
	}
	p := &Proxy{opts: opts, resolver: opts.Resolver, dialTimeout: opts.DialTimeout, log: opts.Logger, self: opts.Self}
	if p.self == nil {
		p.self = selfaddr.New()
	}
	for _, pfx := range opts.AllowPrivate {
		if !pfx.IsValid() {
			return nil, fmt.Errorf("%w: invalid allow-private prefix %v", ErrInvalidOptions, pfx)
		}
		p.allowPrivate = append(p.allowPrivate, netip.PrefixFrom(pfx.Addr().Unmap(), unmappedBits(pfx)).Masked())
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if p.dialTimeout == 0 {
		p.dialTimeout = defaultDialTimeout
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	d := &net.Dialer{Timeout: p.dialTimeout}
	p.dial = d.DialContext
	p.tr = &http.Transport{
		Proxy:               nil, // never chain to an environment proxy
		DialContext:         p.transportDial,
		DisableCompression:  true, // pass bytes through untouched
		MaxIdleConnsPerHost: 64,   // many users on one host (the 10-user bench) must not churn connections
		IdleConnTimeout:     90 * time.Second,
	}
	p.gp = p.newGoproxy()
	p.srv = &http.Server{
		Handler:           http.HandlerFunc(p.serveHTTP),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, clientConnKey{}, c)
		},
	}
	return p, nil
}

// unmappedBits converts an IPv4-mapped prefix length to its IPv4 length.
func unmappedBits(pfx netip.Prefix) int {
	if pfx.Addr().Is4In6() {
		return max(pfx.Bits()-96, 0)
	}
	return pfx.Bits()
}

// newGoproxy configures goproxy: no environment proxies, no MITM, our own
// judge for CONNECT and plain requests, our own error pages.
func (p *Proxy) newGoproxy() *goproxy.ProxyHttpServer {
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = goproxyLogger{p.log}
	gp.Verbose = false
	gp.Tr = p.tr
	gp.ConnectDial = nil // dial through ctx.Dialer (the checked addresses)
	gp.ConnectDialWithReq = nil
	gp.KeepAcceptEncoding = true
	gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writePlain(w, http.StatusBadRequest, "cdpguard egress proxy: not a proxy request\n")
	})
	gp.ConnectionErrHandler = p.connectError
	gp.OnRequest().HandleConnectFunc(p.handleConnect)
	gp.OnRequest().DoFunc(p.handleRequest)
	gp.OnResponse().DoFunc(p.handleResponse)
	return gp
}

// serveHTTP hands one request to goproxy. A plain (non-CONNECT) request
// gets a writer that flushes its status line and every write of its body:
// goproxy copies a response body into the http.Server's buffered writer
// and flushes only text/event-stream (its transfer-encoding check never
// matches, the client side of net/http drops that header), so a response
// that has sent under a few KB and not ended reached Chrome with no bytes
// at all: long polls, streamed HTML and chunked SSE stalled
// (docs/decisions/2026-12-02-self.md). CONNECT keeps the server's writer:
// goproxy hijacks it.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		w = flushingWriter{w}
	}
	p.gp.ServeHTTP(w, r)
}

// flushingWriter passes each write on at once. It keeps Hijack (WebSocket
// upgrades through a plain request) and Unwrap (http.ResponseController).
type flushingWriter struct{ http.ResponseWriter }

// WriteHeader writes the header as upstream sent it: net/http's server
// adds a Date header when there is none, which a proxy passing headers on
// must not (a nil value suppresses it).
func (f flushingWriter) WriteHeader(code int) {
	if h := f.Header(); code >= http.StatusOK {
		if _, ok := h["Date"]; !ok {
			h["Date"] = nil
		}
	}
	f.ResponseWriter.WriteHeader(code)
	if code >= http.StatusOK { // not 101: goproxy hijacks the connection after it
		f.Flush()
	}
}

func (f flushingWriter) Write(b []byte) (int, error) {
	n, err := f.ResponseWriter.Write(b)
	if err == nil {
		f.Flush()
	}
	return n, err
}

func (f flushingWriter) Flush() {
	if fl, ok := f.ResponseWriter.(http.Flusher); ok { // http.Server's writer is one
		fl.Flush()
	}
}

func (f flushingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(f.ResponseWriter).Hijack()
}

func (f flushingWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// Serve accepts proxy connections on l until Close. It returns nil after
// Close.
func (p *Proxy) Serve(l net.Listener) error {
	if ap, err := netip.ParseAddrPort(l.Addr().String()); err == nil {
		p.self.Add(ap)
	}
	err := p.srv.Serve(trackingListener{Listener: l, t: &p.conns})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("egress: serve: %w", err)
	}
	return nil
}

// Close stops the listeners and ends every live connection, tunnels
// included: when the guard stops, nothing keeps flowing.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		err = p.srv.Close()
		p.conns.closeAll()
		p.tr.CloseIdleConnections()
	})
	if err != nil {
		return fmt.Errorf("egress: close: %w", err)
	}
	return nil
}

// Stats returns the current counters.
func (p *Proxy) Stats() Stats {
	return Stats{
		Allowed:       p.allowed.Load(),
		Refused:       p.refused.Load(),
		ActiveTunnels: p.conns.count(kindTunnel),
	}
}

// Dialled reports whether a connection a server of the guard accepted,
// from peer to its own address local, is one this proxy dialled and still
// holds open: the guard's endpoint refuses such requests, so a route to the
// host that the self-address set does not know (a local route, a port
// forward back to the host without address translation) still cannot take
// a page's request to the guard's own HTTP surface. The connection is
// registered before the dial returns, so before any byte is sent on it.
func (p *Proxy) Dialled(peer, local netip.AddrPort) bool { return p.conns.dialled(peer, local) }

// isSelf reports whether ap is one of the proxy's own listening addresses
// (a request looping back into the proxy) or another address of the guard
// in Options.Self (its CDP endpoint), on
// any of the host's addresses when the listener's address is unspecified.
func (p *Proxy) isSelf(ap netip.AddrPort) bool { return p.self.Contains(ap) }

// goproxyLogger sends goproxy's own messages to slog at debug level.
type goproxyLogger struct{ log *slog.Logger }

func (g goproxyLogger) Printf(format string, v ...any) {
	if g.log.Enabled(context.Background(), slog.LevelDebug) {
		g.log.Debug(fmt.Sprintf(format, v...), "component", "goproxy")
	}
}

// writePlain writes a short plain-text response.
func writePlain(w http.ResponseWriter, code int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}
