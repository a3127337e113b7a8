package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chromedp/cdproto/network"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// netRequestIn are browser_network_request's arguments, named as
// @playwright/mcp names them.
type netRequestIn struct {
	Index    int    `json:"index" jsonschema:"the request's number, as browser_network_requests printed it (1-based)"`
	Part     string `json:"part,omitempty" jsonschema:"only this part: request-headers, request-body, response-headers or response-body (omit for all)"`
	Filename string `json:"filename,omitempty" jsonschema:"ignored: results are returned inline, never written to files"`
}

// netBody bounds a body shown by browser_network_request.
const netBody = 20_000

// toolNetworkRequest shows one request of the current tab: only requests
// the user's own tab made (its Network events) and the guard's verdicts on
// the user's own requests are there, so nothing of another user's traffic
// can be.
func (s *Server) toolNetworkRequest(ctx context.Context, u *user, in netRequestIn) (*mcp.CallToolResult, error) {
	switch in.Part {
	case "", "request-headers", "request-body", "response-headers", "response-body":
	default:
		return nil, fmt.Errorf("part %q is not one of request-headers, request-body, response-headers, response-body", clip(in.Part, 30))
	}
	if in.Index < 1 {
		return nil, errors.New("index must be 1 or more: a number browser_network_requests printed")
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	var e netEntry
	found := false
	for _, x := range t.net {
		if x.n == in.Index {
			e, found = x, true
		}
	}
	bl, blocked := blockOf(u.tabBlocks(t), e)
	u.mu.Unlock()
	if !found {
		return nil, fmt.Errorf("request #%d not found in this tab (the last %d are kept); call browser_network_requests to see the numbers", in.Index, netKeep)
	}
	body := func(req bool) string {
		if req {
			if !e.hasPost {
				return "(none)"
			}
			return fetchBody(ctx, t, "Network.getRequestPostData", e.id, "postData")
		}
		switch {
		case blocked:
			return "(none: cdpguard blocked the request)"
		case e.failed != "":
			return "(none: the request failed)"
		case e.status == 0:
			return "(none yet: the request is pending)"
		}
		return fetchBody(ctx, t, "Network.getResponseBody", e.id, "body")
	}
	orNone := func(s string) string {
		if s == "" {
			return "(none)"
		}
		return s
	}
	var out string
	switch in.Part {
	case "request-headers":
		out = orNone(e.reqHeaders)
	case "request-body":
		out = body(true)
	case "response-headers":
		out = orNone(e.resHeaders)
	case "response-body":
		out = body(false)
	default:
		var b strings.Builder
		fmt.Fprintf(&b, "Request #%d: %s %s\nType: %s\n", e.n, e.method, e.url, e.kind)
		switch {
		case e.failed != "":
			fmt.Fprintf(&b, "Status: failed: %s\n", e.failed)
		case e.status == 0:
			b.WriteString("Status: pending\n")
		default:
			fmt.Fprintf(&b, "Status: %d %s\n", e.status, e.statusText)
		}
		if blocked {
			fmt.Fprintf(&b, "BLOCKED by cdpguard (host %s): %s\n", bl.host(), bl.Reason)
		}
		fmt.Fprintf(&b, "\nRequest headers:\n%s\n\nRequest body:\n%s\n\nResponse headers:\n%s\n\nResponse body", orNone(e.reqHeaders), body(true), orNone(e.resHeaders))
		if e.mime != "" {
			fmt.Fprintf(&b, " (%s)", e.mime)
		}
		fmt.Fprintf(&b, ":\n%s", body(false))
		out = b.String()
	}
	return textResult(cut(out, readSection) + ignoredFile(in.Filename)), nil
}

// fetchBody asks Chrome for a request's or response's body (it keeps them
// for a while) and renders it bounded; binary bodies are described, not
// shown.
func fetchBody(ctx context.Context, t *tab, method string, id network.RequestID, field string) string {
	var r map[string]any
	if err := t.s.Call(ctx, method, map[string]any{"requestId": id}, &r); err != nil {
		if ctx.Err() != nil {
			return "(not available: the call ended)"
		}
		return "(not available: " + clip(err.Error(), 200) + ")"
	}
	text, _ := r[field].(string)
	if enc, _ := r["base64Encoded"].(bool); enc {
		raw, err := base64.StdEncoding.DecodeString(text)
		if err != nil || !utf8.Valid(raw) {
			return fmt.Sprintf("(binary, %d bytes, not shown)", len(raw))
		}
		text = string(raw)
	}
	if text == "" {
		return "(empty)"
	}
	return cut(text, netBody)
}
