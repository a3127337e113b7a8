package relay

import (
	"context"
	"errors"
	"time"
)

// This file holds an agent's limits and its end: the rate limit, the
// byte-bounded outgoing queue and back-pressure, closing, and forgetting its
// sessions. Its commands in flight are inflight.go's.

// allow takes one token from the agent's bucket.
func (a *Agent) allow() bool {
	if a.opts.Rate < 0 {
		return true
	}
	return takeToken(&a.tokens, &a.refill, a.opts.Rate, time.Now())
}

// enqueue queues msg for the agent's writer and applies the byte bounds:
// an agent (or user) over its maximum is cut off at once, and one whose
// own queue has stayed over its back-pressure mark longer than the pause
// bound is cut off too. It runs on the mux read loop and never blocks.
func (a *Agent) enqueue(msg []byte) {
	select {
	case <-a.quit:
		return
	default:
	}
	// Counted before it is queued: the writer may take and write it at
	// once, and its release must not come before this count (the totals
	// would dip under what is held, and waitRoom let a command through
	// that the agent's mark should have held back).
	b, n, now := a.opts.Bounds, int64(len(msg)), time.Now()
	held := a.held.add(n, b.AgentQueueBytes, now)
	var user int64
	if a.opts.Share != nil {
		user = a.opts.Share.held.add(n, b.UserQueueBytes, now)
	}
	total := a.m.held.add(n, -1, now)
	if !a.q.push(msg) { // the writer has ended: never written
		a.release(n)
		return
	}
	if b.Elsewhere != nil && b.TotalMaxBytes > 0 {
		total += b.Elsewhere()
	}
	if over(total, b.TotalMaxBytes) {
		if top := a.m.heaviest(); top != nil {
			top.cutOff(CutTotalBytes, total, b.TotalMaxBytes)
		}
	}
	switch {
	case over(held, b.AgentMaxBytes):
		a.cutOff(CutAgentBytes, held, b.AgentMaxBytes)
	case a.opts.Share != nil && over(user, b.UserMaxBytes):
		a.cutOff(CutUserBytes, user, b.UserMaxBytes)
	case b.PauseBound > 0:
		if since := a.held.overSince(); since.Equal(now) { // went over the mark just now
			a.armPause(since)
		}
	}
}

// armPause cuts the agent off if its queue is still over its mark, without
// having fallen under it, PauseBound after since. A timer rather than a
// check on the next message: an agent that sends nothing more and reads
// nothing would never be checked.
func (a *Agent) armPause(since time.Time) {
	t := time.AfterFunc(a.opts.Bounds.PauseBound, func() {
		if a.held.overSince().Equal(since) {
			a.cutOff(CutPaused, a.held.load(), a.opts.Bounds.AgentQueueBytes)
		}
	})
	a.mu.Lock()
	if a.pauseTimer != nil {
		a.pauseTimer.Stop()
	}
	a.pauseTimer = t
	a.mu.Unlock()
}

// release uncounts n bytes written or dropped.
func (a *Agent) release(n int64) {
	if n == 0 {
		return
	}
	now := time.Now()
	a.held.add(-n, a.opts.Bounds.AgentQueueBytes, now)
	a.m.held.add(-n, -1, now)
	if a.opts.Share != nil {
		a.opts.Share.held.add(-n, a.opts.Bounds.UserQueueBytes, now)
	}
}

// cutOff closes the agent for a byte or pause bound and reports it. The
// report comes before the agent's end is signalled: whoever sees the
// connection closed for a bound (a test, the metrics) also sees the
// report, which could otherwise come after Serve closed the connection.
func (a *Agent) cutOff(kind string, held, bound int64) {
	reason := cutReason(kind, held, bound, a.opts.Bounds.PauseBound)
	a.closeThen(StatusPolicy, reason, func() {
		if a.opts.Hooks != nil {
			a.opts.Hooks.CutOff(kind, reason)
		}
	})
}

// dropped reports a reply or event over the one-message bound.
func (a *Agent) dropped(kind string) {
	if a.opts.Hooks != nil {
		a.opts.Hooks.Dropped(kind)
	}
}

// waitRoom holds the agent's reading (back-pressure) while its queue, or
// its user's, is over the back-pressure mark, until it falls to half the
// mark. The pause bound (armPause) and the maxima end an agent that does
// not catch up; the wait ends with it. It reports whether to go on
// reading.
func (a *Agent) waitRoom(ctx context.Context) bool {
	b := a.opts.Bounds
	throttled := false
	for {
		pressed, wake := a.held.pressed(b.AgentQueueBytes)
		if !pressed && a.opts.Share != nil {
			pressed, wake = a.opts.Share.held.pressed(b.UserQueueBytes)
		}
		var owe *time.Timer
		if !pressed {
			if pressed, wake = a.owesTooMuch(b.AgentQueueBytes); pressed {
				// A command that never ends (an evaluate awaiting a promise
				// only a later command resolves) must not stall the agent.
				owe = time.NewTimer(b.OweWait)
			}
		}
		if !pressed {
			return true
		}
		if !throttled {
			throttled = true
			if a.opts.Hooks != nil {
				a.opts.Hooks.Throttled()
			}
		}
		if !a.sleep(ctx, wake, owe) {
			return !a.stopped(ctx)
		}
	}
}

// sleep waits for wake, or for owe to fire (false), the agent's end or
// ctx's end (false); it stops owe.
func (a *Agent) sleep(ctx context.Context, wake <-chan struct{}, owe *time.Timer) bool {
	var expire <-chan time.Time
	if owe != nil {
		defer owe.Stop()
		expire = owe.C
	}
	select {
	case <-wake:
		return true
	case <-expire:
	case <-a.quit:
	case <-ctx.Done():
	}
	return false
}

// stopped reports whether the agent or ctx has ended.
func (a *Agent) stopped(ctx context.Context) bool {
	select {
	case <-a.quit:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// unknownInFlight bounds an agent's commands in the browser until its first
// reply tells their size: a burst sent at once cannot pile up in the
// browser before the average exists.
const unknownInFlight = 16

// DefaultOweWait bounds a wait for a reply when the agent's commands in
// the browser owe more than its mark: past it the next command goes out, so
// a client waiting on a command that only a later one ends is slowed, never
// stalled.
const DefaultOweWait = time.Second

// noteReply keeps the running average of the agent's reply sizes: a
// quarter of each new reply, the first one whole. Only the mux read loop
// calls it.
func (a *Agent) noteReply(n int64) {
	avg := a.replyAvg.Load()
	if avg == 0 {
		avg = n
	} else {
		avg += (n - avg) / 4
	}
	a.replyAvg.Store(max(avg, 1))
	select {
	case a.replied <- struct{}{}:
	default:
	}
}

// owesTooMuch reports whether the replies the agent's commands in the
// browser will bring, at its average reply size, would take its queue over
// mark; if so, the channel gets a token when a reply arrives. Without it
// an agent whose replies are big but that reads just fast enough never
// fills its queue here, while its commands pile up in the browser (and
// their replies in the browser connection ahead of every other user's).
func (a *Agent) owesTooMuch(mark int64) (bool, <-chan struct{}) {
	avg := a.replyAvg.Load()
	if mark < 0 {
		return false, nil
	}
	if avg == 0 { // no reply yet: at most unknownInFlight commands in the browser
		avg = max(mark/unknownInFlight, 1)
	}
	a.mu.Lock()
	n := int64(len(a.inflight))
	a.mu.Unlock()
	if n == 0 || n*avg+a.held.load() <= mark {
		return false, nil
	}
	return true, a.replied
}

// closeWith ends the agent with code and reason; it reports whether this
// call did (the first close wins).
func (a *Agent) closeWith(code int, reason string) bool {
	return a.closeThen(code, reason, nil)
}

// closeThen is closeWith that, when this call is the one that closes, runs
// first (when not nil) before the agent's end is signalled.
func (a *Agent) closeThen(code int, reason string, first func()) bool {
	closed := false
	a.closeMu.Do(func() {
		closed = true
		if reason != "" {
			a.closeErr = errors.New(reason)
		}
		a.closeCode = code
		if first != nil {
			first()
		}
		close(a.quit)
	})
	return closed
}

// cleanup forgets the agent's sessions and detaches its browser sessions.
func (a *Agent) cleanup() {
	a.mu.Lock()
	a.closed = true
	if a.pauseTimer != nil {
		a.pauseTimer.Stop()
	}
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
	var lost []*pending
	for id, p := range a.m.pending {
		if p.agent == a {
			delete(a.m.pending, id)
			lost = append(lost, p)
		}
	}
	delete(a.m.agents, a)
	closed := a.m.closed
	a.m.mu.Unlock()
	for _, p := range lost { // their reply hooks end what they began (the controls' record of input in flight)
		a.settleLost(p)
	}
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
