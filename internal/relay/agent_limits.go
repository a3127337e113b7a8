package relay

import (
	"errors"
	"time"
)

// This file holds an agent's limits and its end: the rate limit, in-flight
// ids, the bounded outgoing queue, closing, and forgetting its sessions.

// doneID frees an agent id once its command is answered.
func (a *Agent) doneID(id int64) {
	a.mu.Lock()
	delete(a.inflight, id)
	a.mu.Unlock()
}

// allow takes one token from the agent's bucket.
func (a *Agent) allow() bool {
	if a.opts.Rate < 0 {
		return true
	}
	return takeToken(&a.tokens, &a.refill, a.opts.Rate, time.Now())
}

func (a *Agent) enqueue(msg []byte) {
	select {
	case <-a.quit:
		return
	default:
	}
	select {
	case a.out <- msg:
	default:
		a.closeWith(StatusPolicy, "cdpguard: agent too slow reading messages")
	}
}

func (a *Agent) closeWith(code int, reason string) {
	a.closeMu.Do(func() {
		if reason != "" {
			a.closeErr = errors.New(reason)
		}
		a.closeCode = code
		close(a.quit)
	})
}

// cleanup forgets the agent's sessions and detaches its browser sessions.
func (a *Agent) cleanup() {
	a.mu.Lock()
	a.closed = true
	owned := a.owned
	browsers := a.browsers
	a.owned, a.browsers = map[string]bool{}, map[string]bool{}
	a.mu.Unlock()
	a.m.mu.Lock()
	for s := range owned {
		if a.m.sessions[s] == a {
			delete(a.m.sessions, s)
		}
	}
	for id, p := range a.m.pending {
		if p.agent == a {
			delete(a.m.pending, id)
			a.releaseSlot(p)
		}
	}
	delete(a.m.agents, a)
	closed := a.m.closed
	a.m.mu.Unlock()
	if closed {
		return
	}
	for s := range browsers {
		_ = a.m.Send("", "Target.detachFromTarget", map[string]any{"sessionId": s})
	}
}

// releaseSlot frees the user's window slot p holds, if any.
func (a *Agent) releaseSlot(p *pending) {
	if p.slot && a.opts.Share != nil {
		p.slot = false
		a.opts.Share.release()
	}
}
