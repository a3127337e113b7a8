package egress

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// The status line of a plain (non-CONNECT) response reaches the client as
// the upstream server wrote it, reason phrase included ("HTTP/1.1 200
// cool!", or "HTTP/1.1 200" with none): Chrome shows it as
// Network.Response.statusText, and a client that reads it (Puppeteer's
// Response.statusText()) must read what it reads direct. goproxy hands the
// response to net/http's server with WriteHeader(code), and the server
// always writes the standard phrase ("200 OK"); net/http has no way to
// write another. So the proxy notes the upstream status on the client's
// connection before goproxy writes the response (noteStatus, from the
// response handler), and the connection swaps it into the status line as
// the server writes it (statusSwap). The server writes one response at a
// time per connection and flushes each before the next begins, so a
// response's first bytes begin a write on the connection.

// statusSwap is the upstream status a client connection's next response
// line carries.
type statusSwap struct {
	mu     sync.Mutex
	code   int
	status string // as upstream sent it after the version: "200 cool!", "200"
}

// maxStatus bounds the status a swap carries: a longer one is left as the
// server writes it.
const maxStatus = 1024

// noteStatus records resp's status on the client connection c
// when net/http would write it differently; a status that is not a clean
// "code[ reason]" is left to the server's standard line.
func noteStatus(c net.Conn, resp *http.Response) {
	tc, ok := c.(*trackedConn)
	if !ok || resp.StatusCode < 200 {
		return
	}
	code := strconv.Itoa(resp.StatusCode)
	st := resp.Status
	if st == code+" "+http.StatusText(resp.StatusCode) || !cleanStatus(st, code) {
		tc.swap.set(0, "")
		return
	}
	tc.swap.set(resp.StatusCode, st)
}

// cleanStatus reports whether st is code alone or code, a space and a
// reason of visible characters, spaces and tabs (RFC 9112's reason-phrase;
// obs-text allowed).
func cleanStatus(st, code string) bool {
	if len(st) > maxStatus || len(st) < len(code) || st[:len(code)] != code {
		return false
	}
	rest := st[len(code):]
	if rest == "" {
		return true
	}
	if rest[0] != ' ' {
		return false
	}
	for i := 1; i < len(rest); i++ {
		if c := rest[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func (s *statusSwap) set(code int, status string) {
	s.mu.Lock()
	s.code, s.status = code, status
	s.mu.Unlock()
}

// rewrite returns b with its status line's code and reason replaced by the
// noted status, when b begins the noted response's status line; the note
// is used once. A write that begins another response (an interim 1xx)
// keeps the note for the next.
func (s *statusSwap) rewrite(b []byte) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == 0 || len(b) < len("HTTP/1.1 200") || !bytes.HasPrefix(b, []byte("HTTP/1.")) || b[8] != ' ' {
		return b, false
	}
	code := strconv.Itoa(s.code)
	if !bytes.HasPrefix(b[9:], []byte(code+" ")) {
		if b[9] != '1' { // not an interim response: the note is stale
			s.code, s.status = 0, ""
		}
		return b, false
	}
	end := bytes.Index(b, []byte("\r\n"))
	st := s.status
	s.code, s.status = 0, ""
	if end < 0 {
		return b, false
	}
	out := make([]byte, 0, len(b)-end+9+len(st))
	out = append(out, b[:9]...)
	out = append(out, st...)
	return append(out, b[end:]...), true
}

// Write passes b on, with the noted status swapped into the status line
// it begins (client connections only; statusSwap). It reports the bytes of
// b written.
func (c *trackedConn) Write(b []byte) (int, error) {
	if c.client {
		if out, swapped := c.swap.rewrite(b); swapped {
			n, err := c.Conn.Write(out)
			if err != nil {
				return min(n, len(b)), err
			}
			return len(b), nil
		}
	}
	return c.Conn.Write(b)
}
