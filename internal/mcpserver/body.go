package mcpserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/cdpguard/cdpguard/internal/bounds"
)

// bodyStep is how much more of a body of unknown length is reserved from
// the budget at a time.
const bodyStep = 64 << 10

// readBody reads r's body whole before the SDK sees it, so that reading is
// bounded: a slot among the bodies being read at once (in all and per
// user), its bytes reserved from the budget, and BodyTimeout for the whole
// body. It returns a release for the reserved bytes, called once the SDK
// is done with the request, or a *refusal or other error to answer with.
func (e *Endpoint) readBody(w http.ResponseWriter, r *http.Request, user string) (release func(), err error) {
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return func() {}, nil
	}
	l := e.limits
	if r.ContentLength > BodyLimit {
		return nil, &refusal{cap: "body_bytes", status: http.StatusRequestEntityTooLarge,
			msg: fmt.Sprintf("cdpguard: request body over %d MiB", BodyLimit>>20)}
	}
	if by, ok := e.bodies.take(user, l.MaxBodies, l.MaxBodiesPerUser); !ok {
		status, who := http.StatusServiceUnavailable, "the guard is"
		if by == CapBodiesPerUser {
			status, who = http.StatusTooManyRequests, "this user is"
		}
		return nil, &refusal{cap: by, status: status, msg: fmt.Sprintf(
			"cdpguard: %s reading its cap of MCP request bodies at once (%s); try again shortly", who, by)}
	}
	defer e.bodies.give(user)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout)) // not supported: the server's own bounds only
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
	_ = rc.SetReadDeadline(time.Time{}) // read whole: the SSE reply may last
	r.Body = io.NopCloser(bytes.NewReader(buf))
	r.ContentLength = int64(len(buf))
	return releaseHeld, nil
}
