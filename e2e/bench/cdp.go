package main

import (
	"context"
	"net/http"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// conn is the e2e suite's raw CDP client, shared by both sides of every
// pair so that client overhead is identical: flat sessions, calls matched
// by id, events fanned out to subscribers. The bench uses it instead of
// chromedp to keep client cost small and equal, which makes the measured
// ratios sharper rather than diluted.
type conn struct{ cl *cdptest.Client }

// dial connects to a browser-level ws:// URL with the given headers.
func dial(ctx context.Context, wsURL string, header http.Header) (*conn, error) {
	cl, err := cdptest.Dial(ctx, wsURL, cdptest.Options{Header: header})
	if err != nil {
		return nil, err
	}
	return &conn{cl: cl}, nil
}

// call sends method with params (nil for none) on session ("" for the
// browser) and waits for its answer or ctx.
func (c *conn) call(ctx context.Context, session, method string, params any) (jsonv2.Value, error) {
	return c.cl.Call(ctx, session, method, params)
}

// subscribe delivers the params of every later event method on session
// until cancel is called. Subscribe before triggering the event.
func (c *conn) subscribe(session, method string) (<-chan jsonv2.Value, func()) {
	return c.cl.Subscribe(session, method)
}

// wait returns the next value of ch, or an error when ctx ends or the
// connection closes first.
func (c *conn) wait(ctx context.Context, ch <-chan jsonv2.Value, what string) (jsonv2.Value, error) {
	return c.cl.Wait(ctx, ch, what)
}

// close ends the connection and waits (bounded) for the read loop.
func (c *conn) close() { c.cl.Close() }
