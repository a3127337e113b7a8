package browser

import (
	"bufio"
	"errors"
	"fmt"
	"regexp"
)

// A message over the size limit used to end the pipe connection, and with
// it every agent of every user: one agent could do that on purpose
// (Runtime.evaluate returning a 270 MB string by value; a page logging one
// while an agent has Runtime enabled). The pipe's framing survives such a
// message (it ends at the next NUL), so the reader skips it instead,
// keeping only its head and tail: an answer becomes a CDP error for the
// command's id (and session), a Fetch.requestPaused becomes one the judge
// fails, another event is dropped.

// oversizeKeep is how much of an oversize message's head and tail is kept.
const oversizeKeep = 512

// errOversizeDropped reports an oversize event that was skipped; the reader
// goes on with the next message.
var errOversizeDropped = errors.New("oversize event dropped")

var (
	// Chrome writes a reply's id first and its sessionId last.
	oversizeID = regexp.MustCompile(`^\{"id":(\d+)[,}]`)
	// ... and an event's method first, then its params in protocol order:
	// Fetch.requestPaused starts with requestId (devtools-protocol
	// Fetch.requestPaused lists requestId first; Chrome's generated
	// serializer keeps that order).
	oversizePaused  = regexp.MustCompile(`^\{"method":"Fetch\.requestPaused","params":\{"requestId":"([0-9A-Za-z._-]{1,200})"[,}]`)
	oversizeSession = regexp.MustCompile(`"sessionId":"([0-9A-Za-z._-]{1,100})"\}$`)
)

// skipOversize reads the rest of an oversize message (msg is what was read
// so far) up to its NUL without keeping it, and returns what oversize makes
// of it.
func (c *pipeConn) skipOversize(msg []byte) ([]byte, error) {
	head := append([]byte(nil), msg[:min(len(msg), oversizeKeep)]...)
	tail := append([]byte(nil), msg[max(0, len(msg)-oversizeKeep):]...)
	for {
		frag, err := c.br.ReadSlice(0)
		last := err == nil
		if last {
			frag = frag[:len(frag)-1]
		} else if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w, and then: %w", ErrMessageTooLarge, err)
		}
		tail = append(tail, frag...)
		tail = append(tail[:0:0], tail[max(0, len(tail)-oversizeKeep):]...)
		if last {
			return c.oversize(head, tail)
		}
	}
}

// oversize is the function oversize, counted for LaunchOptions.OnOversize.
func (c *pipeConn) oversize(head, tail []byte) ([]byte, error) {
	msg, err := oversize(head, tail, c.maxMsg)
	if c.onOversize != nil {
		switch {
		case err != nil:
			c.onOversize("event")
		case oversizeID.Match(msg):
			c.onOversize("answer")
		default:
			c.onOversize("requestPaused")
		}
	}
	return msg, err
}

// oversize turns an oversize message, given by its head and tail (tail nil:
// head is the whole message), into a CDP error answer for its id, or
// errOversizeDropped for an event. limit is the bound it broke, named in
// the error.
func oversize(head, tail []byte, limit int) ([]byte, error) {
	if tail == nil {
		tail = head[max(0, len(head)-oversizeKeep):]
		head = head[:min(len(head), oversizeKeep)]
	}
	id := oversizeID.FindSubmatch(head)
	if id == nil {
		return oversizeEvent(head, tail, limit)
	}
	out := fmt.Sprintf(`{"id":%s,"error":{"code":-32000,"message":"cdpguard: the browser's answer was over the %s message limit and was dropped"}`, id[1], sizeName(limit))
	if s := oversizeSession.FindSubmatch(tail); s != nil {
		out += fmt.Sprintf(`,"sessionId":%q`, s[1])
	}
	return []byte(out + "}"), nil
}

// oversizeEvent drops an oversize event, except a Fetch.requestPaused: that
// request is held until someone answers it, so it becomes a requestPaused
// the guard's judge cannot read ("request" is not an object) but whose
// requestId it can, and the judge fails it (Fetch.failRequest
// BlockedByClient, fetchdomain.Judge.Paused). Dropped, the request would
// stay held: the judge would never have armed a deadline for it.
func oversizeEvent(head, tail []byte, limit int) ([]byte, error) {
	id := oversizePaused.FindSubmatch(head)
	if id == nil {
		return nil, errOversizeDropped
	}
	out := fmt.Sprintf(`{"method":"Fetch.requestPaused","params":{"requestId":%q,"request":"cdpguard: this paused request's event was over the %s message limit"}`, id[1], sizeName(limit))
	if s := oversizeSession.FindSubmatch(tail); s != nil {
		out += fmt.Sprintf(`,"sessionId":%q`, s[1])
	}
	return []byte(out + "}"), nil
}

// sizeName names a message limit for an error: in MB when it is a whole
// number of them (the default), in bytes otherwise.
func sizeName(limit int) string {
	if limit >= 1<<20 && limit%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", limit>>20)
	}
	return fmt.Sprintf("%d-byte", limit)
}
