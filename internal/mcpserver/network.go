package mcpserver

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/js"
)

// netKeep bounds the requests and blocks kept per tab and per user.
const netKeep = 200

// netEntry is one request of a tab, as browser_network_requests shows it.
type netEntry struct {
	id     string
	method string
	url    string
	kind   string
	status int64
	failed string
}

// blockEntry is one request the guard refused (Guard.requestBlocked).
type blockEntry struct {
	URL          string `json:"url"`
	Reason       string `json:"reason"`
	ResourceType string `json:"resourceType"`
	FrameID      string `json:"frameId"`
	TopLevel     bool   `json:"topLevel"`
}

func (b blockEntry) host() string {
	if p, err := url.Parse(b.URL); err == nil && p.Hostname() != "" {
		return p.Hostname()
	}
	return b.URL // a Connection refusal names host:port
}

// blocked keeps one of the guard's blocks; runs on the guard's writer.
func (u *user) blocked(params []byte) {
	var b blockEntry
	if jsonv2.Unmarshal(params, &b) != nil {
		return
	}
	b.URL, b.Reason = clip(b.URL, 500), clip(b.Reason, 300)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.blocks = append(u.blocks, b)
	if len(u.blocks) > netKeep {
		u.blocks = u.blocks[len(u.blocks)-netKeep:]
	}
}

// blocksSince returns the user's blocks after the first n.
func (u *user) blockCount() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.blocks)
}

// topLevelBlock returns a block of t's main-frame document among the
// blocks recorded after mark (a blockCount), if any.
func (u *user) topLevelBlock(t *tab, mark int) (blockEntry, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if mark > len(u.blocks) {
		mark = 0 // the ring was cut: look at all of it
	}
	for _, b := range u.blocks[mark:] {
		if b.TopLevel && (b.FrameID == t.id || b.FrameID == "") {
			return b, true
		}
	}
	return blockEntry{}, false
}

// network keeps a tab's requests; runs on the guard's writer.
func (u *user) network(session, method string, params []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.tabOfSession(session)
	if t == nil {
		return
	}
	find := func(id string) *netEntry {
		for i := len(t.net) - 1; i >= 0; i-- {
			if t.net[i].id == id {
				return &t.net[i]
			}
		}
		return nil
	}
	switch method {
	case "Network.requestWillBeSent":
		var e network.EventRequestWillBeSent
		if jsonv2.Unmarshal(params, &e) != nil || e.Request == nil {
			return
		}
		t.net = append(t.net, netEntry{id: string(e.RequestID), method: e.Request.Method, url: clip(e.Request.URL, 300), kind: string(e.Type)})
		if len(t.net) > netKeep {
			t.net = t.net[len(t.net)-netKeep:]
		}
	case "Network.responseReceived":
		var e network.EventResponseReceived
		if jsonv2.Unmarshal(params, &e) != nil || e.Response == nil {
			return
		}
		if n := find(string(e.RequestID)); n != nil {
			n.status = e.Response.Status
		}
	case "Network.loadingFailed":
		var e network.EventLoadingFailed
		if jsonv2.Unmarshal(params, &e) != nil {
			return
		}
		if n := find(string(e.RequestID)); n != nil {
			n.failed = clip(e.ErrorText, 100)
		}
	}
}

// targetCreated records a page a page opened (a popup, a target=_blank
// link) so that the action's result reports it.
func (u *user) targetCreated(params []byte) {
	var e target.EventTargetCreated
	if jsonv2.Unmarshal(params, &e) != nil || e.TargetInfo == nil {
		return
	}
	if e.TargetInfo.Type != "page" || e.TargetInfo.OpenerID == "" {
		return // the tools' own tabs have no opener
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.popups) < 32 {
		u.popups = append(u.popups, string(e.TargetInfo.TargetID))
	}
	u.front = "" // Chrome shows the new tab
}

// seen gives target id its stable index (first seen, first listed).
func (u *user) seen(id string) {
	for _, o := range u.order {
		if o == id {
			return
		}
	}
	u.order = append(u.order, id)
}

// takePopups makes the last page an action opened the current tab and
// returns the sentence reporting the new tabs ("" without any).
func (u *user) takePopups(ctx context.Context) (string, error) {
	u.mu.Lock()
	ids := u.popups
	u.popups = nil
	u.mu.Unlock()
	if len(ids) == 0 {
		return "", nil
	}
	for _, id := range ids {
		u.seen(id)
	}
	ps, err := u.pages(ctx)
	if err != nil {
		return "", err
	}
	var live []string
	for _, id := range ids {
		if hasTarget(ps, id) {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		return "", nil // closed already
	}
	t, err := u.attach(ctx, live[len(live)-1])
	if err != nil {
		return "", err
	}
	// A new tab starts at about:blank: wait (bounded) for its first page.
	waitLoaded(ctx, t, 3*time.Second)
	ps, err = u.pages(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i, p := range ps {
		for _, id := range live {
			if string(p.TargetID) == id {
				fmt.Fprintf(&b, "The action opened a new tab %d: %s (%s).", i, clip(p.Title, 200), p.URL)
				if id == t.id {
					b.WriteString(" It is now the current tab; browser_tabs {action: \"select\", index} goes back.")
				}
				b.WriteString("\n")
			}
		}
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// waitLoaded waits (bounded) until t's document is complete.
func waitLoaded(ctx context.Context, t *tab, limit time.Duration) {
	end := time.Now().Add(limit)
	for time.Now().Before(end) {
		res, err := cdp.Call(ctx, t.s, runtime.Evaluate, runtime.EvaluateParams{Expression: js.MCPLoaded, ReturnByValue: ptr(true)})
		if err != nil {
			return
		}
		var done bool
		if res.Result != nil && jsonv2.Unmarshal(res.Result.Value, &done) == nil && done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// front brings t to the front when it is not: Chrome throttles a
// background tab, so an action there would be slower.
func (u *user) frontTab(ctx context.Context, t *tab) error {
	u.mu.Lock()
	ok := u.front == t.id
	u.mu.Unlock()
	if ok {
		return nil
	}
	if err := u.pipe.Call(ctx, "", target.CommandActivateTarget, &target.ActivateTargetParams{TargetID: target.ID(t.id)}, nil); err != nil {
		return err
	}
	u.mu.Lock()
	u.front = t.id
	u.mu.Unlock()
	return nil
}

type netIn struct {
	Blocked bool `json:"blockedOnly,omitempty" jsonschema:"list only the requests the guard blocked"`
}

func (s *Server) toolNetwork(ctx context.Context, u *user, in netIn) (*mcp.CallToolResult, error) {
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for id := range u.tabs {
		ids[id] = true
	}
	u.mu.Lock()
	entries := append([]netEntry(nil), t.net...)
	var blocks []blockEntry
	for _, b := range u.blocks {
		// A block of another tab's main frame is that tab's; a subframe's
		// or a connection's is shown on every tab.
		if b.FrameID == t.id || !ids[b.FrameID] {
			blocks = append(blocks, b)
		}
	}
	u.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "Blocked by cdpguard: %d request(s).\n", len(blocks))
	for _, bl := range blocks {
		fmt.Fprintf(&b, "BLOCKED %s %s (host %s): %s\n", bl.ResourceType, bl.URL, bl.host(), bl.Reason)
	}
	if !in.Blocked {
		fmt.Fprintf(&b, "Requests of this tab (the last %d kept): %d.\n", netKeep, len(entries))
		for _, e := range entries {
			st := fmt.Sprint(e.status)
			if e.failed != "" {
				st = "failed: " + e.failed
			} else if e.status == 0 {
				st = "pending"
			}
			fmt.Fprintf(&b, "%s %s %s [%s]\n", e.method, e.url, e.kind, st)
		}
	}
	return textResult(strings.TrimRight(b.String(), "\n")), nil
}
