package relay

import (
	"cmp"
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

// Chrome's answers to a command its session can no longer answer
// (content/browser/devtools/devtools_session.cc, chromium/chromium at
// 00a7bd264b02: kTargetClosedMessage and kTargetCrashedMessage, sent by
// DevToolsSession::ClearPendingMessages as
// crdtp::DispatchResponse::ServerError(did_crash ? kTargetCrashedMessage :
// kTargetClosedMessage), code -32000). Chrome sends them itself only when
// a crashed renderer comes back (reload) or a navigation swaps the
// renderer; a session that detaches, or whose target closes, drops its
// commands in flight without a word (DevToolsAgentHostImpl::DetachInternal
// disposes of the session), and the relay answers them in Chrome's words.
const (
	targetClosedMessage  = "Inspected target navigated or closed"
	targetCrashedMessage = "Target crashed"
)

// doneID frees an agent's (session, id) once its command is answered,
// unless the pair now stands for a later command (browser id bid).
func (a *Agent) doneID(key inflightKey, bid int64) {
	a.mu.Lock()
	if a.inflight[key] == bid {
		delete(a.inflight, key)
	}
	a.mu.Unlock()
}

// lost is a command in flight on a session that ended.
type lost struct {
	bid int64
	p   *pending
	msg string
}

// endSessions forgets the agent's sessions that Chrome ended (detached
// with their parent, or their target closed or crashed) and answers each
// of their commands still in flight with Chrome's error, freeing its id;
// the mux forgets the command, so a late reply from the browser is not
// delivered twice. It runs on the mux read loop, before the event that
// tells the agent the session ended.
func (a *Agent) endSessions(ended []string) {
	a.mu.Lock()
	msgs := make(map[string]string, len(ended))
	for _, s := range ended {
		msgs[s] = targetClosedMessage
		if a.crashed[s] {
			msgs[s] = targetCrashedMessage
		}
		delete(a.targets, s)
		delete(a.owned, s)
		delete(a.browsers, s)
		delete(a.crashed, s)
	}
	var gone []lost
	for k, bid := range a.inflight {
		if msg, ok := msgs[k.session]; ok {
			delete(a.inflight, k)
			gone = append(gone, lost{bid: bid, msg: msg})
		}
	}
	a.mu.Unlock()
	a.m.mu.Lock()
	for _, s := range ended {
		if a.m.sessions[s] == a {
			delete(a.m.sessions, s)
		}
	}
	for i, l := range gone {
		// A command whose reply the read loop already took is answered
		// by that reply; this loop is the read loop, so none is half-way.
		if p := a.m.pending[l.bid]; p != nil && p.agent == a {
			delete(a.m.pending, l.bid)
			gone[i].p = p
		}
	}
	a.m.mu.Unlock()
	slices.SortFunc(gone, func(x, y lost) int { return cmp.Compare(x.bid, y.bid) }) // in the order sent
	for _, l := range gone {
		if l.p != nil {
			a.answerLost(l.p, l.msg)
		}
	}
}

// answerLost answers a command whose session ended with Chrome's error
// (code -32000, msg), through its reply hook like any reply.
func (a *Agent) answerLost(p *pending, msg string) {
	a.releaseSlot(p)
	var result []byte
	errRaw := cdpmsg.AppendErrorObject(nil, cdpmsg.CodeServerError, msg)
	if p.hook != nil {
		result, errRaw = p.hook(nil, errRaw)
	}
	select { // one fewer command owes a reply (waitRoom)
	case a.replied <- struct{}{}:
	default:
	}
	a.enqueue(cdpmsg.AppendResponse(nil, p.origID, a.visible(p.session), result, errRaw))
}

// noteCrash records that session's renderer crashed (Inspector.targetCrashed)
// or came back (Inspector.targetReloadedAfterCrash): its commands in
// flight when it ends get Chrome's "Target crashed". Chrome answers them
// itself if the page is reloaded first.
func (a *Agent) noteCrash(session string, crashed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.owned[session] {
		return
	}
	if crashed {
		a.crashed[session] = true
	} else {
		delete(a.crashed, session)
	}
}
