package egress

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/elazarl/goproxy"
)

// verdict is a judged target that may not be dialled, with the status the
// client gets: 403 for refusals by policy or address, 502 when the name did
// not resolve.
type verdict struct {
	status  int
	refusal Refusal
}

// judge decides one target: policy first, then a single resolution (host
// map, then resolver), then an address check of every answer. On success it
// returns the only addresses the dialer may use.
func (p *Proxy) judge(ctx context.Context, method string, t target) (*checked, *verdict) {
	refuse := func(addr netip.Addr, reason string) (*checked, *verdict) {
		return nil, &verdict{status: http.StatusForbidden, refusal: Refusal{
			Host: t.host, Port: t.port, Addr: addr, Reason: reason, Method: method,
		}}
	}
	// The policy generation is read before the decision: a reload that
	// lands after it is seen by dialChecked (Recheck bumps it first).
	gen := p.policyGen.Load()
	decide, sc := p.opts.Decide, scopeOf(ctx)
	if sc != nil {
		decide = sc.decide
	}
	if decide == nil {
		return refuse(netip.Addr{}, "no policy configured")
	}
	if ok, reason := decide(t.host, t.port); !ok {
		if reason == "" {
			reason = "not on the allowlist"
		}
		return refuse(netip.Addr{}, reason)
	}

	var addrs []netip.Addr
	fromMap := false
	switch {
	case t.literal:
		addrs = []netip.Addr{t.addr}
	default:
		if a, ok := p.lookupMap(t.host); ok {
			addrs, fromMap = []netip.Addr{a}, true
			break
		}
		rctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
		answer, err := p.resolver.LookupNetIP(rctx, "ip", t.host)
		cancel()
		if err != nil || len(answer) == 0 {
			p.log.Debug("egress name did not resolve", "host", t.host, "port", t.port, "error", err)
			return nil, &verdict{status: http.StatusBadGateway, refusal: Refusal{
				Host: t.host, Port: t.port, Reason: "name did not resolve", Method: method,
			}}
		}
		addrs = answer
	}

	ck := &checked{name: t.String(), scope: sc, host: t.host, port: t.port, gen: gen}
	seen := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		if seen[a] {
			continue
		}
		seen[a] = true
		if ok, reason := p.addrPermitted(a, fromMap, sc); !ok {
			if !t.literal {
				reason = "name resolves to a " + reason
			}
			return refuse(a, reason)
		}
		ap := netip.AddrPortFrom(a, uint16(t.port))
		if p.isSelf(ap) {
			return refuse(a, "target is the proxy itself")
		}
		ck.addrs = append(ck.addrs, ap)
	}
	return ck, nil
}

// lookupMap consults the host map, tolerating a nil map.
func (p *Proxy) lookupMap(host string) (netip.Addr, bool) {
	if p.opts.HostMap == nil {
		return netip.Addr{}, false
	}
	a, ok := p.opts.HostMap.Lookup(host)
	if !ok || !a.IsValid() {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

// report logs and counts a verdict and, for refusals, tells OnRefuse,
// tagged with the scope of the connection that carried ctx's request.
func (p *Proxy) report(ctx context.Context, v *verdict) {
	if sc := scopeOf(ctx); sc != nil {
		v.refusal.Tag = sc.tag
	}
	r := v.refusal
	if v.status != http.StatusForbidden {
		return
	}
	p.refused.Add(1)
	attrs := []slog.Attr{
		slog.String("method", r.Method), slog.String("host", r.Host),
		slog.Int("port", r.Port), slog.String("reason", r.Reason),
	}
	if r.Addr.IsValid() {
		attrs = append(attrs, slog.String("address", r.Addr.String()))
	}
	p.log.LogAttrs(context.Background(), slog.LevelDebug, "egress refused", attrs...) // the guard logs the canonical "blocked" line
	if p.opts.OnRefuse != nil {
		p.opts.OnRefuse(r)
	}
}

// malformed builds the verdict for a target that could not be parsed.
func malformed(method, raw, reason string) *verdict {
	if len(raw) > 100 {
		raw = raw[:100]
	}
	return &verdict{status: http.StatusForbidden, refusal: Refusal{Host: raw, Reason: reason, Method: method}}
}

// body is the plain-text page a client gets for a verdict: the host and the
// reason, never the resolved address.
func (v *verdict) body() string {
	r := v.refusal
	where := r.Host
	if r.Port != 0 {
		where = target{host: r.Host, port: r.Port}.String()
	}
	if v.status == http.StatusForbidden {
		return fmt.Sprintf("cdpguard blocked the connection to %s: %s\n", where, r.Reason)
	}
	return fmt.Sprintf("cdpguard could not connect to %s: %s\n", where, r.Reason)
}

// response renders v as a short plain-text HTTP response. A name that
// did not resolve (502) names Chrome's error for it (NetErrorPhrase).
func (v *verdict) response() *http.Response {
	if v.status == http.StatusBadGateway {
		return netErrorResponse("NameNotResolved", v.body())
	}
	return plainResponse(v.status, v.body())
}

func plainResponse(status int, body string) *http.Response {
	h := make(http.Header)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("Cache-Control", "no-store")
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Close:         true,
	}
}

// connectState lets the connection-error handler tell a failed dial (answer
// 502) from an error inside an established tunnel (write nothing into it).
type connectState struct {
	target string
	dialed atomic.Bool
}

// handleConnect judges a CONNECT (https, wss, and ws through a proxy).
func (p *Proxy) handleConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	t, why := parseAuthority(host, 0)
	var ck *checked
	var v *verdict
	if why != "" {
		v = malformed(http.MethodConnect, host, why)
	} else {
		ck, v = p.judge(ctx.Req.Context(), http.MethodConnect, t)
	}
	if v != nil {
		p.report(ctx.Req.Context(), v)
		ctx.Resp = v.response()
		return &goproxy.ConnectAction{Action: goproxy.ConnectReject}, host
	}
	p.allowed.Add(1)
	ck.kind = kindTunnel
	state := &connectState{target: ck.name}
	ctx.UserData = state
	ctx.Dialer = func(dctx context.Context, _, addr string) (net.Conn, error) {
		c, err := p.dialChecked(dctx, ck, addr)
		if err == nil {
			state.dialed.Store(true)
		}
		return c, err
	}
	return &goproxy.ConnectAction{Action: goproxy.ConnectAccept}, ck.name
}

// connectError answers a CONNECT whose dial failed with 502; errors inside an
// established tunnel are only logged, never written into it.
func (p *Proxy) connectError(w io.Writer, ctx *goproxy.ProxyCtx, err error) {
	state, _ := ctx.UserData.(*connectState)
	if state == nil || state.dialed.Load() {
		p.log.Debug("egress tunnel error", "error", err)
		return
	}
	p.log.Info("egress dial failed", "target", state.target, "error", err)
	_ = plainResponse(http.StatusBadGateway,
		fmt.Sprintf("cdpguard could not connect to %s\n", state.target)).Write(w)
}

// requestState remembers the judged target of a plain request for the
// response handler's error page.
type requestState struct{ target string }

// handleRequest judges a plain absolute-form request (http only).
func (p *Proxy) handleRequest(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	if !strings.EqualFold(r.URL.Scheme, "http") {
		v := malformed(r.Method, r.URL.Scheme+"://"+r.URL.Host, "scheme not proxied")
		p.report(r.Context(), v)
		return r, v.response()
	}
	t, why := parseAuthority(r.URL.Host, 80)
	var ck *checked
	var v *verdict
	if why != "" {
		v = malformed(r.Method, r.URL.Host, why)
	} else {
		ck, v = p.judge(r.Context(), r.Method, t)
	}
	if v != nil {
		p.report(r.Context(), v)
		return r, v.response()
	}
	p.allowed.Add(1)
	ck.kind = kindHTTP
	ctx.UserData = &requestState{target: ck.name}

	out := r.WithContext(context.WithValue(r.Context(), checkedKey{}, ck))
	u := *r.URL
	u.User = nil
	u.Host = ck.name // the transport's dial address; Host header stays as sent
	out.URL = &u
	out.Host = r.Host
	if out.Host == "" {
		out.Host = r.URL.Host
	}
	out.Header = r.Header.Clone()
	removeHopByHop(out.Header)
	return out, nil
}

// handleResponse passes an upstream response on with its status line as
// upstream wrote it (status.go), and turns a failed round trip into a
// short 502 that names the target but not the address or the error, and
// names in its status line the network error Chrome would show direct
// (NetErrorPhrase).
func (p *Proxy) handleResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	client, _ := ctx.Req.Context().Value(clientConnKey{}).(net.Conn)
	st, upstream := ctx.UserData.(*requestState) // nil for the proxy's own refusals
	if resp != nil {
		switch {
		case !upstream:
		case resp.StatusCode == http.StatusSwitchingProtocols:
			if rw, ok := resp.Body.(io.ReadWriteCloser); ok {
				resp.Body = &upgradedBody{ReadWriteCloser: rw, client: client}
			}
			return resp
		case forgedNetError(resp):
			resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
		}
		noteStatus(client, resp)
		return resp
	}
	target := "the host"
	if upstream {
		target = st.target
	}
	reason := netErrorReason(ctx.Error)
	p.log.Info("egress request failed", "target", target, "error", ctx.Error, "netError", reason)
	r := netErrorResponse(reason, fmt.Sprintf("cdpguard could not connect to %s\n", target))
	noteStatus(client, r)
	return r
}

// removeHopByHop deletes proxy and hop-by-hop headers, keeping the
// Connection/Upgrade pair of a WebSocket handshake.
func removeHopByHop(h http.Header) {
	ws := strings.EqualFold(h.Get("Upgrade"), "websocket")
	for _, v := range h.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			tok = http.CanonicalHeaderKey(strings.TrimSpace(tok))
			if tok == "" || (ws && tok == "Upgrade") {
				continue
			}
			h.Del(tok)
		}
	}
	for _, k := range []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Keep-Alive"} {
		h.Del(k)
	}
	if !ws {
		h.Del("Connection")
		h.Del("Upgrade")
	}
}

// clientConnKey carries the accepted client connection in request contexts.
type clientConnKey struct{}

// upgradedBody wraps the upstream side of a WebSocket upgraded through a
// plain (non-CONNECT) proxy request. goproxy relays it but never closes the
// hijacked client connection; closing it when the upstream side ends keeps
// the relay from outliving either peer.
type upgradedBody struct {
	io.ReadWriteCloser
	client net.Conn
	once   sync.Once
}

func (b *upgradedBody) Read(p []byte) (int, error) {
	n, err := b.ReadWriteCloser.Read(p)
	if err != nil {
		b.closeClient()
	}
	return n, err
}

func (b *upgradedBody) Write(p []byte) (int, error) {
	n, err := b.ReadWriteCloser.Write(p)
	if err != nil {
		b.closeClient()
	}
	return n, err
}

func (b *upgradedBody) Close() error {
	b.closeClient()
	return b.ReadWriteCloser.Close()
}

func (b *upgradedBody) closeClient() {
	b.once.Do(func() {
		if b.client != nil {
			_ = b.client.Close()
		}
	})
}
