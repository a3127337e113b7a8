package browser

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// pipeReadBuffer is the read buffer of the pipe. Messages longer than it are
// assembled from several ReadSlice calls into one exactly-sized slice.
const pipeReadBuffer = 1 << 20

// pipeConn is the --remote-debugging-pipe transport: messages to Chrome go to
// its fd 3, messages from Chrome come from its fd 4, each ended by a NUL.
type pipeConn struct {
	r *os.File // our end of Chrome's fd 4
	w *os.File // our end of Chrome's fd 3

	readMu  sync.Mutex
	br      *bufio.Reader
	readErr error // sticky
	maxMsg  int   // LaunchOptions.MaxMessage, else MaxMessageSize

	onOversize func(kind string) // LaunchOptions.OnOversize; may be nil

	writeMu  sync.Mutex
	writeErr error // sticky

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

func newPipeConn(r, w *os.File) *pipeConn {
	return &pipeConn{
		r:      r,
		w:      w,
		br:     bufio.NewReaderSize(r, pipeReadBuffer),
		maxMsg: MaxMessageSize,
		closed: make(chan struct{}),
	}
}

// ReadMessage implements Conn.
func (c *pipeConn) ReadMessage() ([]byte, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.readErr != nil {
		return nil, c.readErr
	}
	msg, err := c.readFrame()
	for errors.Is(err, errOversizeDropped) {
		msg, err = c.readFrame()
	}
	if err != nil {
		c.readErr = c.wrapErr("read", err)
		return nil, c.readErr
	}
	return msg, nil
}

// readFrame reads up to the next NUL. A message that fits the buffer costs
// one copy; a longer one is collected in a slice that grows geometrically.
func (c *pipeConn) readFrame() ([]byte, error) {
	var msg []byte
	for {
		frag, err := c.br.ReadSlice(0)
		switch {
		case err == nil:
			frag = frag[:len(frag)-1] // drop the NUL
			if len(msg)+len(frag) > c.maxMsg {
				return c.oversize(append(msg, frag...), nil)
			}
			if msg == nil {
				return bytes.Clone(frag), nil
			}
			return append(msg, frag...), nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(msg)+len(frag) > c.maxMsg {
				return c.skipOversize(append(msg, frag...))
			}
			msg = append(msg, frag...)
		case errors.Is(err, io.EOF) && len(msg)+len(frag) > 0:
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
	}
}

// WriteMessage implements Conn.
func (c *pipeConn) WriteMessage(msg []byte) error {
	if bytes.IndexByte(msg, 0) >= 0 {
		return ErrInvalidMessage
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.writeErr != nil {
		return c.writeErr
	}
	// Two writes under the lock: nothing else writes to this pipe, and it
	// saves copying multi-MB messages to append the terminator.
	if _, err := c.w.Write(msg); err != nil {
		c.writeErr = c.wrapErr("write", err)
		return c.writeErr
	}
	if _, err := c.w.Write([]byte{0}); err != nil {
		c.writeErr = c.wrapErr("write", err)
		return c.writeErr
	}
	return nil
}

// wrapErr reports errors after Close as ErrClosed, so callers can tell their
// own shutdown from the browser going away.
func (c *pipeConn) wrapErr(op string, err error) error {
	select {
	case <-c.closed:
		return fmt.Errorf("pipe %s: %w", op, ErrClosed)
	default:
	}
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return fmt.Errorf("pipe %s: %w", op, err)
}

// Close implements Conn. Closing our end of fd 3 also tells Chrome to shut
// down.
func (c *pipeConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		errW := c.w.Close()
		errR := c.r.Close()
		c.closeErr = errors.Join(errW, errR)
	})
	return c.closeErr
}
