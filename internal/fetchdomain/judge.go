// Package fetchdomain is the one place where cdpguard judges requests the
// browser has paused. The guard enables the Fetch domain with pattern "*" on
// its browser-level session, so every loader of every target pauses here
// first; each pause gets exactly one answer: continue, fail, or (for a
// blocked top-level navigation) an explanation page. Every error path fails
// the request, and a deadline fails a pause that was not answered in time:
// an unanswered pause stalls the page.
package fetchdomain

import (
	"context"
	"encoding/base64"
	"log/slog"
	"sync"
	"time"

	"github.com/cdpguard/cdpguard/internal/ascii"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/grants"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/selfaddr"
)

// Sender sends a CDP command on a session without awaiting its reply.
type Sender interface {
	Send(sessionID, method string, params any) error
}

// Block describes one refused request, for logs and Guard.requestBlocked.
type Block struct {
	URL          string `json:"url"`
	Reason       string `json:"reason"`
	ResourceType string `json:"resourceType"`
	FrameID      string `json:"frameId,omitempty"`
	TopLevel     bool   `json:"topLevel"`
}

// Options configures a Judge. The zero value with a nil Policy fails every
// request.
type Options struct {
	Policy *policy.Policy
	// Instructions are shown on the explanation page.
	Instructions string
	// ErrorForNavigation answers blocked top-level navigations with
	// net::ERR_BLOCKED_BY_CLIENT instead of the explanation page.
	ErrorForNavigation bool
	// QueueSize bounds the pauses waiting for the worker; zero means 4096.
	QueueSize int
	// Shed, if set, counts every request failed at once because the queue
	// was full (see Judge.Paused). It must not block.
	Shed Counter
	// PauseTimeout fails a pause not answered in time; zero means 10 s.
	PauseTimeout time.Duration
	Logger       *slog.Logger
	// BlockServiceWorkers refuses service worker scripts (requests with the
	// Service-Worker: script header), so no service worker registers.
	BlockServiceWorkers bool
	// Blocks, if set, is told about every refused request. It must not
	// block.
	Blocks Blocks
	// Latency, if set, is told how long each pause the worker answered
	// waited (the decision latency histogram). It must not block.
	Latency Latency
	// ReadLoopSender, if set, sends the answers Paused gives itself (a
	// pause the queue has no room for, one after Run has ended, one that
	// cannot be read): Paused runs on the browser connection's read loop,
	// where a send can block behind another writer. It must not block.
	ReadLoopSender Sender
	// Grants, if set, holds the session grants of the user whose tab a
	// request's frame belongs to. They are consulted only for requests the
	// policy refuses, and never override a --block entry
	// (grants.Set.Decide).
	Grants Grants
	// Self, if set, knows the guard's own addresses: requests to them are
	// refused whatever the policy and the grants say, since a page must
	// not reach the guard's own HTTP surface.
	Self Self
	// Rules, if set, gives the policy and instructions in force for a
	// request; they replace Policy and Instructions.
	Rules Rules
	// Pages, if set, is the page registry (internal/pages): a page's main
	// frame has its target's id, so a Document request in a live page's is
	// a top-level navigation (answered with the explanation page); unset,
	// no request is top-level.
	Pages Pages
	// NetErrors pauses the responses of allowed http:// requests too, and
	// fails one the egress proxy marks as a connection it could not make
	// with the network error Chrome shows for it direct (neterror.go). Set
	// it when the browser's traffic goes through the egress proxy.
	NetErrors bool
}

// Grants are the users' session grants (internal/scopes.Table).
type Grants interface {
	// ForFrame returns the grants of the user whose tab frameID belongs
	// to (nil: none).
	ForFrame(frameID string) *grants.Set
}

// Counter counts one thing (a prometheus.Counter).
type Counter interface{ Inc() }

// Latency observes how long a pause waited for its answer
// (internal/metrics.Metrics).
type Latency interface{ Decision(waited time.Duration) }

// Blocks is told about every refused request (the guard's log, metrics,
// controls and the user's agents).
type Blocks interface{ Blocked(b Block) }

// Self knows the guard's own addresses.
type Self interface {
	// IsSelf reports whether host (normalised, as policy.Decision has it)
	// and port are the guard itself (every address of the host on one of
	// its ports, selfaddr.Set).
	IsSelf(host string, port int) bool
}

// Rules is the policy in force by the user of a frame.
type Rules interface {
	// RulesFor returns the policy and instructions in force for a
	// request of frameID (its user's group, after the latest reload). It
	// is called once per request, so it must be cheap and must not block.
	RulesFor(frameID string) (*policy.Policy, string)
}

// Pages tells the live pages (internal/pages.Registry).
type Pages interface {
	// IsPage reports whether frameID is a live page target's id.
	IsPage(frameID string) bool
}

// ReasonSelf is the reason of a request refused because it is addressed to
// the guard itself.
const ReasonSelf = "the address is cdpguard's own endpoint; pages may not reach it"

// Judge answers Fetch.requestPaused events.
type Judge struct {
	send Sender
	opts Options
	log  *slog.Logger

	queue chan pause

	mu       sync.Mutex
	stopped  bool                // Run has ended: pauses are failed at once
	inflight map[string]deadline // requestId → an unanswered pause
}

// deadline is the timer that fails one unanswered pause, and the session the
// pause came on (to fail it when the judge stops).
type deadline struct {
	timer   *time.Timer
	session string
}

type pause struct {
	session string
	rp      requestPaused // decoded once, on the read loop
	at      time.Time     // when the pause reached the judge
}

// requestPaused is the part of Fetch.requestPaused the judge reads.
type requestPaused struct {
	RequestID string `json:"requestId"`
	Request   struct {
		URL     string            `json:"url"`
		Method  string            `json:"method"`
		Headers map[string]string `json:"headers"`
	} `json:"request"`
	FrameID             string `json:"frameId"`
	ResourceType        string `json:"resourceType"`
	NetworkID           string `json:"networkId"`
	RedirectedRequestID string `json:"redirectedRequestId"`
	ResponseStatusCode  int    `json:"responseStatusCode"`
	ResponseErrorReason string `json:"responseErrorReason"`
	ResponseStatusText  string `json:"responseStatusText"`
}

// New returns a Judge that answers through send.
func New(send Sender, opts Options) *Judge {
	if opts.PauseTimeout <= 0 {
		opts.PauseTimeout = 10 * time.Second
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Judge{
		send:     send,
		opts:     opts,
		log:      log,
		queue:    make(chan pause, opts.QueueSize),
		inflight: make(map[string]deadline),
	}
}

// EnableParams are the Fetch.enable params that pause every request at the
// request stage.
func EnableParams() map[string]any {
	return map[string]any{"patterns": []map[string]any{{"urlPattern": "*", "requestStage": "Request"}}}
}

// Paused takes a Fetch.requestPaused event from the read loop and never
// blocks it: the deadline starts now and the worker answers. A pause that
// finds the queue full is failed at once (Options.Shed counts it), and a pause that
// comes after Run has ended is failed at once too, so that no request is
// left held when the guard stops (Chrome lets held requests go out when the
// intercepting connection closes: README "Security model", Lifetime, and
// e2e/sigkill_test.go).
func (j *Judge) Paused(sessionID string, params []byte) {
	var rp requestPaused
	if err := cdpmsg.UnmarshalBrowser(params, &rp); err != nil || rp.RequestID == "" {
		// Fail closed: answer whatever request id can still be read.
		var id struct {
			RequestID string `json:"requestId"`
		}
		if cdpmsg.UnmarshalBrowser(params, &id) != nil || id.RequestID == "" {
			j.log.Error("unreadable Fetch.requestPaused; cannot answer it", "err", err)
			return
		}
		j.log.Warn("unreadable Fetch.requestPaused; failing it", "requestId", id.RequestID, "err", err)
		j.failFromReadLoop(sessionID, id.RequestID)
		return
	}
	if rp.ResponseStatusCode != 0 || rp.ResponseErrorReason != "" {
		j.answerResponse(sessionID, rp) // an allowed request's response (NetErrors): answered at once, no queue
		return
	}
	if !j.arm(sessionID, rp.RequestID) {
		j.log.Debug("request paused after the judge stopped; failing it", "requestId", rp.RequestID)
		j.failFromReadLoop(sessionID, rp.RequestID)
		return
	}
	select {
	case j.queue <- pause{session: sessionID, rp: rp, at: time.Now()}:
	default:
		if j.claim(rp.RequestID) {
			j.log.Warn("too many paused requests waiting; failing this one", "requestId", rp.RequestID, "url", rp.Request.URL)
			if j.opts.Shed != nil {
				j.opts.Shed.Inc()
			}
			j.failFromReadLoop(sessionID, rp.RequestID)
		}
	}
}

// arm starts the deadline for one pause. It reports false when the judge
// has stopped: the caller then answers the pause itself.
func (j *Judge) arm(session, requestID string) bool {
	t := time.AfterFunc(j.opts.PauseTimeout, func() {
		if j.claim(requestID) {
			j.log.Warn("paused request timed out; failing it", "requestId", requestID)
			j.fail(session, requestID)
		}
	})
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.stopped {
		t.Stop()
		return false
	}
	if old, ok := j.inflight[requestID]; ok {
		old.timer.Stop()
	}
	j.inflight[requestID] = deadline{timer: t, session: session}
	return true
}

// claim reports whether the caller is the one to answer requestID.
func (j *Judge) claim(requestID string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	d, ok := j.inflight[requestID]
	if !ok {
		return false
	}
	d.timer.Stop()
	delete(j.inflight, requestID)
	return true
}

// Run answers paused requests until ctx ends. Then it fails every pause
// not yet answered (while the browser connection still carries them: the
// guard closes it after Run has ended), and Paused fails later ones at once.
func (j *Judge) Run(ctx context.Context) {
	defer j.stop()
	for {
		select {
		case p := <-j.queue:
			j.answer(p)
		case <-ctx.Done():
			return
		}
	}
}

// Stop fails every pause the judge holds, in the caller's goroutine, and
// makes Paused fail later ones at once. The guard calls it before it closes
// the browser connection: Chrome lets a held request go out when the
// intercepting connection closes, and in attach mode the browser outlives
// the guard. Run's end does the same; Stop may be called any number of
// times, before or after Run ends. A pause the worker is answering at that
// moment keeps the worker's answer.
func (j *Judge) Stop() { j.stop() }

// stop fails every unanswered pause and makes Paused fail new ones.
func (j *Judge) stop() {
	j.mu.Lock()
	j.stopped = true
	pending := j.inflight
	j.inflight = map[string]deadline{}
	j.mu.Unlock()
	for id, d := range pending {
		d.timer.Stop()
		j.fail(d.session, id)
	}
}

func (j *Judge) answer(p pause) {
	rp := p.rp
	if !j.claim(rp.RequestID) {
		return
	}
	if j.opts.Latency != nil {
		defer func() { j.opts.Latency.Decision(time.Since(p.at)) }()
	}
	pol, instructions := j.rules(rp.FrameID)
	d := j.decide(pol, rp.Request.URL, rp.FrameID)
	if d.Allowed && j.opts.BlockServiceWorkers && isServiceWorkerScript(rp.Request.Headers) {
		d.Allowed = false
		d.Reason = "service workers are blocked (--service-workers=block)"
	}
	if d.Allowed {
		if err := j.send.Send(p.session, "Fetch.continueRequest", j.continueParams(rp)); err != nil {
			j.log.Debug("continue failed", "err", err)
		}
		return
	}
	top := rp.ResourceType == "Document" && j.opts.Pages != nil && j.opts.Pages.IsPage(rp.FrameID)
	b := Block{URL: rp.Request.URL, Reason: d.Reason, ResourceType: rp.ResourceType, FrameID: rp.FrameID, TopLevel: top}
	j.log.Debug("request blocked", "url", b.URL, "reason", b.Reason, "type", b.ResourceType, "topLevel", top, "redirect", rp.RedirectedRequestID != "")
	if j.opts.Blocks != nil {
		j.opts.Blocks.Blocked(b)
	}
	if top && !j.opts.ErrorForNavigation {
		body := base64.StdEncoding.EncodeToString(ExplanationPage(rp.Request.URL, d.Reason, pol.Origins(), instructions))
		err := j.send.Send(p.session, "Fetch.fulfillRequest", map[string]any{
			"requestId":    rp.RequestID,
			"responseCode": 403,
			"responseHeaders": []map[string]string{
				{"name": "Content-Type", "value": "text/html; charset=utf-8"},
				{"name": "Content-Security-Policy", "value": "default-src 'none'"},
				{"name": "Cache-Control", "value": "no-store"},
			},
			"body": body,
		})
		if err == nil {
			return
		}
	}
	j.fail(p.session, rp.RequestID)
}

// rules returns the policy and instructions that judge a request of
// frameID: Options.Rules when set, else Options.Policy and Instructions.
func (j *Judge) rules(frameID string) (*policy.Policy, string) {
	if j.opts.Rules != nil {
		return j.opts.Rules.RulesFor(frameID)
	}
	return j.opts.Policy, j.opts.Instructions
}

// decide judges a request by the policy or, when the policy refuses it, by
// the grants of the user whose frame made it.
func (j *Judge) decide(p *policy.Policy, url, frameID string) policy.Decision {
	if p == nil {
		return policy.Decision{Reason: "no policy configured"}
	}
	d := p.Decide(url)
	if !d.Allowed && j.opts.Grants != nil && frameID != "" {
		d = j.opts.Grants.ForFrame(frameID).Decide(d)
	}
	if d.Allowed && j.opts.Self != nil && d.Host != "" {
		if port, ok := selfaddr.URLPort(url); ok && j.opts.Self.IsSelf(d.Host, port) {
			return policy.Decision{Reason: ReasonSelf, Host: d.Host}
		}
	}
	return d
}

// failFromReadLoop fails a request from Paused, through ReadLoopSender
// when there is one.
func (j *Judge) failFromReadLoop(session, requestID string) {
	s := j.opts.ReadLoopSender
	if s == nil {
		s = j.send
	}
	if err := s.Send(session, "Fetch.failRequest", requestIDParams(requestID, "BlockedByClient")); err != nil {
		j.log.Debug("fail failed", "err", err)
	}
}

func (j *Judge) fail(session, requestID string) {
	if err := j.send.Send(session, "Fetch.failRequest", requestIDParams(requestID, "BlockedByClient")); err != nil {
		j.log.Debug("fail failed", "err", err)
	}
}

// isServiceWorkerScript reports whether a request fetches a service worker
// script: browsers send "Service-Worker: script" on exactly those.
func isServiceWorkerScript(h map[string]string) bool {
	for k, v := range h {
		if ascii.EqualFold(k, "service-worker") {
			return ascii.EqualFold(v, "script")
		}
	}
	return false
}

// requestIDParams builds the params of Fetch.continueRequest (reason "") and
// Fetch.failRequest as raw JSON: every paused request is answered with one
// of them, so they skip reflection-based marshalling.
func requestIDParams(requestID, reason string) []byte {
	b := make([]byte, 0, len(requestID)+48)
	b = append(b, `{"requestId":`...)
	b = cdpmsg.AppendString(b, requestID)
	if reason != "" {
		b = append(b, `,"errorReason":`...)
		b = cdpmsg.AppendString(b, reason)
	}
	return append(b, '}')
}
