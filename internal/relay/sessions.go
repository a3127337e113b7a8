package relay

import (
	"slices"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// This file holds an agent's sessions: learned from the events and
// replies that attach them, ended when Chrome ends them (their commands
// in flight settled, endSessions), and all forgotten and detached at the
// agent's end (cleanup).

// sessionTarget is what one of an agent's target sessions is attached to,
// and the session that attached it (where a detach must be sent).
type sessionTarget struct {
	target, parent string
}

// SessionsOn returns the agent's sessions attached to target, each with the
// session that attached it.
func (a *Agent) SessionsOn(target string) (sessions, parents []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for s, st := range a.targets {
		if st.target == target {
			sessions = append(sessions, s)
			parents = append(parents, st.parent)
		}
	}
	return sessions, parents
}

// Leaving returns the agent's sessions that Chrome ends for the agent's
// Target.detachFromTarget sent on session on naming sessionID or, in the
// deprecated form, targetID (then the sessions on attached to it): those,
// and every session attached below them, because Chrome detaches a
// session's children with it. A session it attached by replying (not
// announced with Target.attachedToTarget) has no known children.
func (a *Agent) Leaving(on, sessionID, targetID string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	children := make(map[string][]string, len(a.targets)) // one pass: an agent may hold many sessions
	for s, st := range a.targets {
		children[st.parent] = append(children[st.parent], s)
	}
	var out []string
	switch {
	case sessionID != "":
		out = append(out, sessionID)
	case targetID != "":
		for _, s := range children[on] {
			if a.targets[s].target == targetID {
				out = append(out, s)
			}
		}
	}
	seen := make(map[string]bool, len(out))
	for _, s := range out {
		seen[s] = true
	}
	for i := 0; i < len(out); i++ { // breadth first down the attach tree
		for _, c := range children[out[i]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// Evict ends the agent's sessions on target, telling the agent why first
// (an Inspector.detached event carrying reason on each session, as Chrome
// sends when it ends a session itself). It sends to the browser, so call
// it from a goroutine that may block, never from the mux read loop.
func (a *Agent) Evict(target, reason string) {
	sessions, parents := a.SessionsOn(target)
	for i, s := range sessions {
		if params, err := rawParams(map[string]string{"reason": reason}); err == nil {
			a.enqueue(cdpmsg.AppendEvent(nil, a.visible(s), "Inspector.detached", params))
		}
		parent := parents[i]
		if parent == "" {
			parent = a.browser
		}
		_ = a.m.Send(parent, "Target.detachFromTarget", map[string]any{"sessionId": s})
	}
}

// TargetOf returns the target the agent's session is attached to; ok is
// false for a session the agent did not attach through an
// attachedToTarget it was told of (its browser session, or the page
// session of a /devtools/page/ connection).
func (a *Agent) TargetOf(session string) (target string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.targets[session]
	return st.target, ok
}

// trackSessions follows the agent's sessions as an event on one of them
// tells of them (pass: the agent gets the event). A session the agent is
// told was attached becomes its own. A session Chrome detached ends, with
// every session attached below it (Chrome detaches them with it, and
// tells of the parent only): their commands in flight are settled, even
// when the agent is not told.
func (a *Agent) trackSessions(e *cdpmsg.Envelope, pass bool) {
	if p := e.Attached; p != nil && pass {
		// An auto-attach (filter {type: "browser"}) can hand the agent a
		// browser-level session too: it gets the browser-level rules.
		a.own(p.SessionID, p.TargetInfo.Type == "browser")
		a.mu.Lock()
		a.targets[p.SessionID] = sessionTarget{target: p.TargetInfo.TargetID, parent: e.SessionID}
		a.mu.Unlock()
	}
	if d := e.Detached; d != nil && d.SessionID != a.browser {
		a.endSessions(a.Leaving(e.SessionID, d.SessionID, ""))
	}
}

// Owns reports whether session is one of the agent's sessions.
func (a *Agent) Owns(session string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.owned[session]
}

// IsBrowserSession reports whether session is one of the agent's
// browser-level sessions.
func (a *Agent) IsBrowserSession(session string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.browsers[session]
}

// own makes session one of the agent's (browser: a browser-level one) and
// routes its events and replies to the agent; a closed agent owns nothing
// new.
func (a *Agent) own(session string, browser bool) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.owned[session] = true
	if browser {
		a.browsers[session] = true
	}
	a.mu.Unlock()
	a.m.mu.Lock()
	a.m.sessions[session] = a
	a.m.mu.Unlock()
}

// targetClosedMessage is the error a command whose session ended is settled
// with inside the guard (its reply hook sees it), in Chrome's words
// (content/browser/devtools/devtools_session.cc, chromium/chromium at
// 00a7bd264b02: kTargetClosedMessage, sent by
// DevToolsSession::ClearPendingMessages as a ServerError, code -32000).
//
// The agent gets no answer to such a command, as from Chrome: a session
// that detaches, or whose target closes, drops its commands in flight
// without a word (DevToolsAgentHostImpl::DetachInternal disposes of the
// session; measured in e2e TestRelayIDsPerSession). Clients end them
// themselves when told of the detach, and tell that case apart: Puppeteer
// rejects them with its TargetCloseError, which it ignores while setting
// up a target that closes at once, where an answer from the guard would
// be a ProtocolError it throws (docs/decisions/2026-12-07-ids-per-session.md).
// Chrome's own answers (a crashed page that is reloaded answers its
// commands "Target crashed") are forwarded like any reply.
const targetClosedMessage = "Inspected target navigated or closed"

// endSessions forgets the agent's sessions that Chrome ended (detached
// with their parent, or their target closed or crashed) and settles each
// of their commands still in flight (settleLost), freeing its id; the mux
// forgets the command, so a late reply from the browser is not
// delivered. It runs on the mux read loop, before the event that tells
// the agent the session ended.
func (a *Agent) endSessions(ended []string) {
	a.mu.Lock()
	gone := make(map[string]bool, len(ended))
	for _, s := range ended {
		gone[s] = true
		delete(a.targets, s)
		delete(a.owned, s)
		delete(a.browsers, s)
	}
	var bids []int64
	for k, bid := range a.inflight {
		if gone[k.session] {
			delete(a.inflight, k)
			bids = append(bids, bid)
		}
	}
	a.mu.Unlock()
	var lost []*pending
	a.m.mu.Lock()
	for _, s := range ended {
		if a.m.sessions[s] == a {
			delete(a.m.sessions, s)
		}
	}
	slices.Sort(bids) // in the order sent
	for _, bid := range bids {
		// A command whose reply the read loop already took is answered
		// by that reply; this loop is the read loop, so none is half-way.
		if p := a.m.pending[bid]; p != nil && p.agent == a {
			delete(a.m.pending, bid)
			lost = append(lost, p)
		}
	}
	a.m.mu.Unlock()
	for _, p := range lost {
		a.settleLost(p)
	}
}

// settleLost ends a command whose session ended inside the guard: its
// reply hook sees Chrome's error (state kept for the command, such as the
// controls' record of an agent's input, ends with it) and its slot of the
// user's window is free. The agent is not answered (targetClosedMessage).
func (a *Agent) settleLost(p *pending) {
	a.releaseSlot(p)
	if p.hook != nil {
		p.hook(nil, cdpmsg.AppendErrorObject(nil, cdpmsg.CodeServerError, targetClosedMessage))
	}
	select { // one fewer command owes a reply (waitRoom)
	case a.replied <- struct{}{}:
	default:
	}
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
