package relay

import (
	"slices"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

// This file holds an agent's commands in flight: which (session, id) pairs
// wait for the browser, and the answer each gets when its session ends
// before the browser answered it.

// inflightKey names one agent command in flight. CDP ids are unique within
// a session, not within a connection: Puppeteer up to 23 numbers each
// CDPSession's commands from 1, so two sessions of one connection may have
// the same id in flight at once, as Chrome allows.
type inflightKey struct {
	session string // the browser session the command went to
	id      int64  // the agent's own id
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

// doneID frees an agent's (session, id) once its command is answered,
// unless the pair now stands for a later command (browser id bid).
func (a *Agent) doneID(key inflightKey, bid int64) {
	a.mu.Lock()
	if a.inflight[key] == bid {
		delete(a.inflight, key)
	}
	a.mu.Unlock()
}

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
