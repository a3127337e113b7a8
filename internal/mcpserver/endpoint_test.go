package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func post(e *Endpoint, h http.Header) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`))
	for k, v := range h {
		r.Header[k] = v
	}
	e.ServeHTTP(rec, r)
	return rec
}

// TestEndpointGates: a nil Endpoint is the server switched off (404); a
// missing required header is a 400, a refused user key a 403, and a
// closing owner a 503 without building a server.
func TestEndpointGates(t *testing.T) {
	var off *Endpoint
	if rec := post(off, nil); rec.Code != http.StatusNotFound {
		t.Errorf("off: %d", rec.Code)
	}
	off.PolicyChanged() // safe on the switched-off endpoint
	spawned := 0
	e := NewEndpoint(EndpointOptions{
		RequireSessionHeader: true,
		Spawn:                func(func(context.Context)) bool { spawned++; return false },
		Server: Options{SessionHeader: "X-User", UserKey: func(h http.Header) (string, error) {
			if h.Get("X-User") == "mallory" {
				return "", errors.New("refused")
			}
			return h.Get("X-User"), nil
		}},
	})
	if rec := post(e, nil); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "X-User") {
		t.Errorf("no header: %d %s", rec.Code, rec.Body)
	}
	if rec := post(e, http.Header{"X-User": {"mallory"}}); rec.Code != http.StatusForbidden {
		t.Errorf("refused key: %d", rec.Code)
	}
	if rec := post(e, http.Header{"X-User": {"alice"}}); rec.Code != http.StatusServiceUnavailable || spawned != 1 {
		t.Errorf("closing owner: %d, spawned %d", rec.Code, spawned)
	}
	e.PolicyChanged() // no server built: nothing to tell
}

// TestEndpointRunsServer: the first request builds the server and runs it
// on the owner's goroutine until the owner's context ends.
func TestEndpointRunsServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	e := NewEndpoint(EndpointOptions{
		Spawn: func(f func(context.Context)) bool {
			go func() { defer close(ended); f(ctx) }()
			return true
		},
		Server: Options{SessionHeader: "X-User"},
	})
	if rec := post(e, nil); rec.Code == http.StatusServiceUnavailable || rec.Code == http.StatusNotFound {
		t.Errorf("first request: %d %s", rec.Code, rec.Body)
	}
	e.PolicyChanged()
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's Run did not end with the owner's context")
	}
}

func TestLinger(t *testing.T) {
	for _, c := range []struct{ idle, want time.Duration }{
		{0, time.Minute}, {time.Hour, time.Minute}, {time.Minute, 15 * time.Second}, {time.Millisecond, 50 * time.Millisecond},
	} {
		if got := Linger(c.idle); got != c.want {
			t.Errorf("Linger(%v) = %v, want %v", c.idle, got, c.want)
		}
	}
	if DialogWait(0) != DefaultDialogWait || DialogWait(time.Second) != time.Second || Version("") != "dev" || Version("1.2") != "1.2" {
		t.Error("DialogWait or Version")
	}
}
