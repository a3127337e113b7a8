package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// rtConn is the part of cdptest.Client an rtClient calls through.
type rtConn interface {
	Call(ctx context.Context, session, method string, params any) (jsonv2.Value, error)
}

// rtDial connects to the guard's browser endpoint as user.
func rtDial(t *testing.T, base, user string) *rtClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := http.Header{userHeader: {user}}
	ws, err := cdptest.BrowserURL(ctx, base, h)
	if err != nil {
		t.Fatal(err)
	}
	r := &rtClient{}
	cl, err := cdptest.Dial(ctx, ws, cdptest.Options{Header: h, OnMessage: r.record})
	if err != nil {
		t.Fatalf("dial %s as %s: %v", ws, user, err)
	}
	r.c, r.cl, r.done = cl.Conn(), cl, cl.Done()
	t.Cleanup(cl.Close)
	return r
}

// record keeps every event.
func (r *rtClient) record(m *cdptest.Message) {
	if m.Method == "" || m.ID != 0 {
		return
	}
	var e rtMsg
	if json.Unmarshal(m.Raw, &e) != nil {
		return
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// rtError is a CDP error answer.
type rtError struct{ Msg string }

func (e *rtError) Error() string { return e.Msg }

// call sends method on session and waits up to d for the answer.
func (r *rtClient) call(session, method string, params any, d time.Duration) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := r.cl.Call(ctx, session, method, params)
	if ce := (*cdptest.Error)(nil); errors.As(err, &ce) {
		return nil, &rtError{Msg: ce.Message}
	}
	return json.RawMessage(res), err
}

// contextOf returns the browser context of a target, as Chrome reports it.
func (r *rtClient) contextOf(t *testing.T, targetID string) string {
	t.Helper()
	res, err := r.call("", "Target.getTargetInfo", map[string]any{"targetId": targetID}, 10*time.Second)
	var ti struct {
		TargetInfo struct {
			BrowserContextID string `json:"browserContextId"`
		} `json:"targetInfo"`
	}
	if err != nil || json.Unmarshal(res, &ti) != nil || ti.TargetInfo.BrowserContextID == "" {
		t.Fatalf("context of %s: %s %v", targetID, res, err)
	}
	return ti.TargetInfo.BrowserContextID
}
