package egress

// Recheck judges every open CONNECT tunnel again, by the DecideFunc of the
// listener it came through, and closes the ones now refused; it returns
// how many it closed. The guard calls it after a policy reload, so a host
// removed from the allowlist loses its open WebSockets and tunnels at once
// instead of keeping them for as long as the page does. Pooled plain-HTTP
// connections are not closed: each request on them is judged anew.
func (p *Proxy) Recheck() int {
	// Bumped before the tunnels are listed: a dial judged before it and
	// registered after the listing judges itself again (dialChecked).
	p.policyGen.Add(1)
	type open struct {
		c      *trackedConn
		decide DecideFunc
	}
	p.conns.mu.Lock()
	var tunnels []open
	for c, kind := range p.conns.conns {
		if kind != kindTunnel || c.host == "" {
			continue
		}
		decide := p.opts.Decide
		if c.scope != nil {
			decide = c.scope.decide
		}
		tunnels = append(tunnels, open{c, decide})
	}
	p.conns.mu.Unlock()
	closed := 0
	for _, t := range tunnels {
		if t.decide != nil {
			if ok, _ := t.decide(t.c.host, t.c.port); ok {
				continue
			}
		}
		if t.c.Close() == nil {
			closed++
		}
		p.log.Info("egress tunnel closed: the policy no longer allows it", "host", t.c.host, "port", t.c.port)
	}
	return closed
}

// stillAllowed judges ck's host again by the DecideFunc of the listener it
// came through, as Recheck does.
func (p *Proxy) stillAllowed(ck *checked) bool {
	decide := p.opts.Decide
	if ck.scope != nil {
		decide = ck.scope.decide
	}
	if decide == nil {
		return false
	}
	ok, _ := decide(ck.host, ck.port)
	return ok
}
