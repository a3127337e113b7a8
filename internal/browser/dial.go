package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/coder/websocket"
)

// maxVersionBody bounds the /json/version response.
const maxVersionBody = 1 << 20

// Dial connects to a running browser. browserURL is either http(s)://host:port
// (GET /json/version finds webSocketDebuggerUrl) or a ws(s):// URL of the
// browser target. ctx bounds connecting only. With a ws URL the Version comes
// from Browser.getVersion (WebKitVersion empty, WebSocketDebuggerURL the URL).
// Environment proxy settings are ignored: the DevTools endpoint is dialled
// directly. maxMessage bounds one message read from the browser; zero
// means MaxMessageSize.
func Dial(ctx context.Context, browserURL string, maxMessage int) (Conn, *Version, error) {
	u, err := url.Parse(browserURL)
	if err != nil {
		return nil, nil, fmt.Errorf("browser url: %w", err)
	}
	transport := &http.Transport{Proxy: nil, ForceAttemptHTTP2: false}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	var v *Version
	switch u.Scheme {
	case "http", "https":
		if v, err = fetchVersion(ctx, client, u); err != nil {
			return nil, nil, err
		}
	case "ws", "wss":
	default:
		return nil, nil, fmt.Errorf("browser url %q: scheme must be http, https, ws or wss", browserURL)
	}
	wsURL := browserURL
	if v != nil {
		wsURL = v.WebSocketDebuggerURL
	}
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		return nil, nil, fmt.Errorf("dial browser %s: %w", wsURL, err)
	}
	if maxMessage <= 0 {
		maxMessage = MaxMessageSize
	}
	ws.SetReadLimit(int64(maxMessage))
	conn := &wsConn{ws: ws}
	if v != nil {
		return conn, v, nil
	}
	v, pending, err := handshake(ctx, conn, func() { _ = conn.Close() })
	if err != nil {
		_ = conn.Close()
		return nil, nil, err
	}
	v.WebSocketDebuggerURL = browserURL
	return withReplay(conn, pending), v, nil
}

// fetchVersion GETs /json/version of the browser at u.
func fetchVersion(ctx context.Context, client *http.Client, u *url.URL) (*Version, error) {
	endpoint := url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/json/version"}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("browser version request: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", endpoint.String(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxVersionBody+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", endpoint.String(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: status %s", endpoint.String(), resp.Status)
	}
	if len(body) > maxVersionBody {
		return nil, fmt.Errorf("get %s: response over %d bytes", endpoint.String(), maxVersionBody)
	}
	var v Version
	if err := jsonv2.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("decode %s: %w", endpoint.String(), err)
	}
	if v.WebSocketDebuggerURL == "" {
		return nil, fmt.Errorf("%s has no webSocketDebuggerUrl", endpoint.String())
	}
	return &v, nil
}

// wsConn is a Conn over a browser WebSocket.
type wsConn struct {
	ws *websocket.Conn

	readMu  sync.Mutex
	readErr error // sticky

	writeMu  sync.Mutex
	writeErr error // sticky

	closed atomic.Bool
}

// ReadMessage implements Conn.
func (c *wsConn) ReadMessage() ([]byte, error) {
	c.readMu.Lock()
	defer c.readMu.Unlock()
	if c.readErr != nil {
		return nil, c.readErr
	}
	_, msg, err := c.ws.Read(context.Background())
	if err != nil {
		c.readErr = c.wrapErr("read", err)
		return nil, c.readErr
	}
	return msg, nil
}

// WriteMessage implements Conn. NUL bytes are refused as on the pipe, so a
// message is accepted or refused the same way on either transport.
func (c *wsConn) WriteMessage(msg []byte) error {
	if bytes.IndexByte(msg, 0) >= 0 {
		return ErrInvalidMessage
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.writeErr != nil {
		return c.writeErr
	}
	if err := c.ws.Write(context.Background(), websocket.MessageText, msg); err != nil {
		c.writeErr = c.wrapErr("write", err)
		return c.writeErr
	}
	return nil
}

func (c *wsConn) wrapErr(op string, err error) error {
	if c.closed.Load() {
		return fmt.Errorf("websocket %s: %w", op, ErrClosed)
	}
	switch {
	case errors.Is(err, websocket.ErrMessageTooBig):
		return fmt.Errorf("websocket %s: %w: %w", op, ErrMessageTooLarge, err)
	case websocket.CloseStatus(err) != -1:
		return fmt.Errorf("websocket %s: %w: %w", op, io.EOF, err)
	}
	return fmt.Errorf("websocket %s: %w", op, err)
}

// Close implements Conn. It closes without the close handshake, which could
// wait seconds for a stalled browser while a reader holds the connection.
func (c *wsConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if err := c.ws.CloseNow(); err != nil {
		return fmt.Errorf("close websocket: %w", err)
	}
	return nil
}
