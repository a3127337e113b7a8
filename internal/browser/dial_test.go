//go:build linux

package browser

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
)

// TestDial dials one Chromium with a debugging port by its http URL and by
// its ws URL: two connections to one browser, as a user's attach makes
// (one launch instead of two: issue 37's CPU).
func TestDial(t *testing.T) {
	httpURL, wsURL := startDebugPortChrome(t)
	t.Run("HTTP", func(t *testing.T) { checkDialHTTP(t, httpURL, wsURL) })
	t.Run("WS", func(t *testing.T) { checkDialWS(t, wsURL) })
}

// checkDialHTTP: Dial of the http URL finds the browser's ws URL and
// version, and the connection carries big messages.
func checkDialHTTP(t *testing.T, httpURL, wsURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), launchTimeout)
	defer cancel()
	conn, v, err := Dial(ctx, httpURL, 0)
	if err != nil {
		t.Fatalf("Dial(%s): %v", httpURL, err)
	}
	defer conn.Close()
	if v.WebSocketDebuggerURL != wsURL || !strings.Contains(v.Browser, "/") || v.ProtocolVersion == "" || v.V8Version == "" {
		t.Errorf("version = %+v, ws url want %s", v, wsURL)
	}
	var got struct {
		Product string `json:"product"`
	}
	call(t, conn, 1, "", "Browser.getVersion", nil, &got)
	if got.Product != v.Browser {
		t.Errorf("product %q, /json/version said %q", got.Product, v.Browser)
	}
	checkBigMessages(t, conn)
}

// checkDialWS: Dial of the ws URL reads the version too; Close ends the
// connection and a second Close is harmless.
func checkDialWS(t *testing.T, wsURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), launchTimeout)
	defer cancel()
	conn, v, err := Dial(ctx, wsURL, 0)
	if err != nil {
		t.Fatalf("Dial(%s): %v", wsURL, err)
	}
	if v.WebSocketDebuggerURL != wsURL || !strings.Contains(v.Browser, "/") || v.ProtocolVersion == "" {
		t.Errorf("version = %+v", v)
	}
	call(t, conn, 1, "", "Browser.getVersion", nil, nil)
	if err := conn.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := conn.ReadMessage(); err == nil {
		t.Error("ReadMessage after Close succeeded")
	}
	if err := conn.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestDialErrors(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"ftp://127.0.0.1:1", "http://127.0.0.1:1", "ws://127.0.0.1:1/devtools/browser/x", "::"} {
		if _, _, err := Dial(ctx, u, 0); err == nil {
			t.Errorf("Dial(%q) succeeded", u)
		}
	}
}

// syncWriter serialises writes to w for the race detector.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
