package mcpserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cdpguard/cdpguard/internal/bounds"
)

// bodyStep is how much more of a body of unknown length is reserved from
// the budget at a time.
const bodyStep = 64 << 10

// bodyGrace is how long a body without a slot among the bodies being
// read at once may take to arrive. A body takes a slot when it starts, if
// one is free; at the caps it is read without one, and refused only if it
// has not arrived within bodyGrace. A client's body arrives with its
// headers or just after them, so stalled bodies holding every slot hold
// off no one's requests (issue 32). Its bytes are reserved from the
// budget from the start either way.
const bodyGrace = time.Second

// graceBytes is the most of a body read without a slot: a larger one
// needs a slot (one freed since, or it is refused naming the cap), so the
// bodies the caps do not count hold at most what a request's headers may
// (httpgate.MaxHeaderBytes), for bodyGrace. Reserving a whole
// Content-Length without a slot let a client at the caps, opening 4 MiB
// bodies that each waited out the grace, hold the byte budget every agent
// receives from. MCP requests are a few kB.
const graceBytes = bodyStep

// readBody reads r's body whole before the SDK sees it, so that reading is
// bounded: its bytes reserved from the budget, BodyTimeout for the whole
// body, and a slot among the bodies being read at once (in all and per
// user), or, at the caps, bodyGrace to arrive without one if it is at
// most graceBytes. It returns a release for the reserved bytes,
// called once the SDK is done with the request, or a *refusal or other
// error to answer with.
func (e *Endpoint) readBody(w http.ResponseWriter, r *http.Request, user string) (release func(), err error) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return func() {}, nil
	}
	l := e.limits
	if r.ContentLength > BodyLimit {
		return nil, &refusal{cap: "body_bytes", status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("cdpguard: request body over %d MiB", BodyLimit>>20)}
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout)) // not supported: the server's own bounds only
	slow := e.slowBody(rc, user)
	defer slow.end()
	var held int64
	releaseHeld := func() {
		if e.o.Budget != nil {
			e.o.Budget.Release(user, held)
		}
	}
	reserve := func(n int64) error {
		if e.o.Budget == nil {
			return nil
		}
		if err := e.o.Budget.Reserve(user, "an /mcp body", n); err != nil {
			var over *bounds.OverBudget
			c := bounds.BoundTotalReceive
			if errors.As(err, &over) {
				c = over.Bound
			}
			return &refusal{cap: c, status: http.StatusServiceUnavailable, msg: err.Error()}
		}
		held += n
		return nil
	}
	size := int64(bodyStep)
	if r.ContentLength >= 0 {
		size = r.ContentLength + 1 // +1: EOF is seen without growing
	}
	if size > graceBytes {
		if refused := slow.grow(); refused != nil {
			return nil, refused
		}
	}
	if err := reserve(size); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > BodyLimit {
				releaseHeld()
				return nil, &refusal{cap: "body_bytes", status: http.StatusRequestEntityTooLarge,
					msg: fmt.Sprintf("cdpguard: request body over %d MiB", BodyLimit>>20)}
			}
			if refused := slow.grow(); refused != nil {
				releaseHeld()
				return nil, refused
			}
			if err := reserve(bodyStep); err != nil {
				releaseHeld()
				return nil, err
			}
			buf = slices.Grow(buf, bodyStep)
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			releaseHeld()
			if refused := slow.end(); refused != nil {
				return nil, refused
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, &refusal{cap: CapBodyTimeout, status: http.StatusRequestTimeout, msg: fmt.Sprintf(
					"cdpguard: request body not read within %v (%s)", l.BodyTimeout, CapBodyTimeout)}
			}
			return nil, fmt.Errorf("cdpguard: reading the request body: %w", err)
		}
	}
	if int64(len(buf)) > BodyLimit {
		releaseHeld()
		return nil, &refusal{cap: "body_bytes", status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("cdpguard: request body over %d MiB", BodyLimit>>20)}
	}
	// Read whole: the grace ends first (a late one would set the deadline
	// again, and the server's read after the body would then cancel the
	// request), then the SSE reply may last.
	slow.end()
	_ = rc.SetReadDeadline(time.Time{})
	r.Body = io.NopCloser(bytes.NewReader(buf))
	r.ContentLength = int64(len(buf))
	return releaseHeld, nil
}

// slowBody is one body's place among the bodies being read at once.
type slowBody struct {
	mu      sync.Mutex
	timer   *time.Timer // the grace of a body read without a slot
	ended   bool
	held    bool     // a slot is held, given back at end
	refused *refusal // no slot was free at the grace's end: the read was cut short
	take    func() *refusal
	give    func()
}

// slowBody takes a slot for a body of user, in the order bodies start.
// At the caps the body is read without one: past bodyGrace it takes one
// freed since, or its read is cut short (rc's read deadline is now) and
// end returns the refusal naming the cap.
func (e *Endpoint) slowBody(rc *http.ResponseController, user string) *slowBody {
	l := e.limits
	s := &slowBody{give: func() { e.bodies.give(user) }}
	s.take = func() *refusal {
		by, ok := e.bodies.take(user, l.MaxBodies, l.MaxBodiesPerUser)
		if ok {
			s.held = true
			return nil
		}
		status, who := http.StatusServiceUnavailable, "the guard is"
		if by == CapBodiesPerUser {
			status, who = http.StatusTooManyRequests, "this user is"
		}
		return &refusal{cap: by, status: status, msg: fmt.Sprintf(
			"cdpguard: %s reading its cap of slow or large MCP request bodies at once (%s); try again shortly", who, by)}
	}
	if s.take() == nil {
		return s
	}
	s.timer = time.AfterFunc(bodyGrace, func() { // ends at once; end waits for it through mu
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ended || s.held || s.refused != nil {
			return
		}
		if s.refused = s.take(); s.refused != nil {
			_ = rc.SetReadDeadline(time.Now())
		}
	})
	return s
}

// grow is asked before a body grows past graceBytes: a body read without
// a slot takes one freed since, or gets the refusal naming the cap.
func (s *slowBody) grow() *refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held || s.ended || s.refused != nil {
		return s.refused
	}
	s.refused = s.take()
	return s.refused
}

// end stops the grace, gives back a slot held, and returns the refusal
// that cut the read short, if one did. It may be called more than once.
func (s *slowBody) end() *refusal {
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended && s.held {
		s.give()
	}
	s.ended = true
	return s.refused
}
