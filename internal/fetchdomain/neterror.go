package fetchdomain

import (
	"strings"

	"github.com/cdpguard/cdpguard/internal/ascii"
	"github.com/cdpguard/cdpguard/internal/egress"
)

// netErrorPhrase begins the reason phrase of the egress proxy's own 502
// for a plain-HTTP request it could not carry: the one contract between
// the proxy and the judge, so it is the proxy's constant.
const netErrorPhrase = egress.NetErrorPhrase

// netErrorReasons are the reasons the judge fails a response with; any
// other name after the phrase is ignored.
var netErrorReasons = map[string]bool{
	"Failed": true, "TimedOut": true, "ConnectionClosed": true, "ConnectionReset": true,
	"ConnectionRefused": true, "ConnectionAborted": true, "ConnectionFailed": true,
	"NameNotResolved": true, "AddressUnreachable": true, "BlockedByClient": true,
}

// interceptsResponse reports whether an allowed request's response pauses
// too (Options.NetErrors): plain http:// only, the requests whose proxy
// answer Chrome would show as the page. An https:// or wss:// failure is a
// failed CONNECT, which Chrome already reports as an error.
func (j *Judge) interceptsResponse(url string) bool {
	return j.opts.NetErrors && len(url) > 5 && ascii.EqualFold(url[:5], "http:")
}

// answerResponse answers a pause at the response stage: a response the
// egress proxy marked as a failed connection is failed with the reason it
// names, so the page, fetch() and the agent see Chrome's own network error
// (net::ERR_CONNECTION_REFUSED) rather than the proxy's 502; any other
// response goes on unchanged. It decides from the pause alone, so Paused
// answers it at once on the read loop (through ReadLoopSender), never
// behind the worker's queue of requests to judge: every allowed http://
// request pauses here once more, redirects once per hop.
func (j *Judge) answerResponse(session string, rp requestPaused) {
	reason := ""
	if r, ok := strings.CutPrefix(rp.ResponseStatusText, netErrorPhrase); ok && rp.ResponseStatusCode == 502 && netErrorReasons[r] {
		reason = r
	}
	method := "Fetch.continueResponse"
	if rp.ResponseErrorReason != "" {
		// Chrome's own network error at the response stage: it goes on
		// as Chrome had it. continueResponse is for a response that came;
		// continueRequest answers either kind (Chromium's own Fetch tests
		// answer a pause with responseErrorReason so).
		method = "Fetch.continueRequest"
	}
	if reason != "" {
		method = "Fetch.failRequest"
		j.log.Debug("connection failed; failing the request with Chrome's error", "url", rp.Request.URL, "reason", reason)
	}
	s := j.opts.ReadLoopSender
	if s == nil {
		s = j.send
	}
	if err := s.Send(session, method, requestIDParams(rp.RequestID, reason)); err != nil {
		j.log.Debug("answering a response failed", "method", method, "err", err)
	}
}

// continueParams are Fetch.continueRequest's params for an allowed
// request, asking for its response too when interceptsResponse says so.
func (j *Judge) continueParams(rp requestPaused) []byte {
	b := requestIDParams(rp.RequestID, "")
	if !j.interceptsResponse(rp.Request.URL) {
		return b
	}
	return append(b[:len(b)-1], `,"interceptResponse":true}`...)
}
