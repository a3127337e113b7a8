package mcpserver

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cdpguard/cdpguard/js"
)

// netKeep bounds the requests and blocks kept per tab and per user.
const netKeep = 200

// netEntry is one request of a tab, as browser_network_requests shows it.
type netEntry struct {
	n          int // its number in browser_network_requests (1-based, per tab)
	gen        int // tab.gen when it was sent
	id         network.RequestID
	method     string
	url        string
	kind       string
	status     int64
	statusText string
	mime       string
	failed     string
	hasPost    bool
	reqHeaders string // "Name: value" lines, bounded (netHeaders)
	resHeaders string
}

// netHeaders bounds the header text kept per request and direction.
const netHeaders = 2000

// headerText renders headers as sorted "Name: value" lines, bounded.
func headerText(h network.Headers) string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %v\n", k, h[k])
	}
	return clip(strings.TrimRight(b.String(), "\n"), netHeaders)
}

// blockEntry is one request the guard refused (Guard.requestBlocked).
type blockEntry struct {
	URL          string      `json:"url"`
	Reason       string      `json:"reason"`
	ResourceType string      `json:"resourceType"`
	FrameID      cdp.FrameID `json:"frameId"`
	TopLevel     bool        `json:"topLevel"`
	seq          int         // its number among the user's blocks (user.blockN)
}

func (b blockEntry) host() string {
	if p, err := url.Parse(b.URL); err == nil && p.Hostname() != "" {
		return p.Hostname()
	}
	return b.URL // a Connection refusal names host:port
}

// blocked keeps one of the guard's blocks; runs on the guard's writer.
func (u *user) blocked(e *blockEntry) {
	b := *e
	b.URL, b.Reason = clip(b.URL, 500), clip(b.Reason, 300)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.blockN++
	b.seq = u.blockN
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
		if b.TopLevel && (b.FrameID == t.frame() || b.FrameID == "") {
			return b, true
		}
	}
	return blockEntry{}, false
}

// network keeps a tab's requests; runs on the guard's writer.
func (u *user) network(session target.SessionID, ev any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.tabOfSession(session)
	if t == nil {
		return
	}
	find := func(id network.RequestID) *netEntry {
		for i := len(t.net) - 1; i >= 0; i-- {
			if t.net[i].id == id {
				return &t.net[i]
			}
		}
		return nil
	}
	switch e := ev.(type) {
	case *network.EventRequestWillBeSent:
		if e.Request == nil {
			return
		}
		t.netSeq++
		t.net = append(t.net, netEntry{n: t.netSeq, gen: t.gen, id: e.RequestID, method: e.Request.Method, url: clip(e.Request.URL, 1000), kind: string(e.Type),
			hasPost: e.Request.HasPostData, reqHeaders: headerText(e.Request.Headers)})
		if len(t.net) > netKeep {
			t.net = t.net[len(t.net)-netKeep:]
		}
	case *network.EventResponseReceived:
		if e.Response == nil {
			return
		}
		if n := find(e.RequestID); n != nil {
			n.status, n.statusText, n.mime = e.Response.Status, clip(e.Response.StatusText, 100), clip(e.Response.MimeType, 100)
			n.resHeaders = headerText(e.Response.Headers)
			if len(e.Response.RequestHeaders) > 0 { // what went on the wire
				n.reqHeaders = headerText(e.Response.RequestHeaders)
			}
		}
	case *page.EventFrameNavigated:
		// The main frame committed a new document: "since the last
		// navigation" starts here, with the request that loaded it (its
		// id is the loader's). A navigation the guard blocked commits
		// nothing, so the page it left keeps its requests and messages.
		if e.Frame == nil || e.Frame.ParentID != "" || e.Frame.ID != t.frame() {
			return
		}
		t.gen++
		t.blockMark = u.blockN
		if n := find(network.RequestID(e.Frame.LoaderID)); n != nil {
			n.gen = t.gen
		}
	case *network.EventLoadingFailed:
		if n := find(e.RequestID); n != nil {
			n.failed = clip(e.ErrorText, 100)
		}
	}
}

// targetCreated records a page a page opened (a popup, a target=_blank
// link) so that the action's result reports it.
func (u *user) targetCreated(e *target.EventTargetCreated) {
	if e.TargetInfo == nil || e.TargetInfo.Type != "page" || e.TargetInfo.OpenerID == "" {
		return // the tools' own tabs have no opener
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.popups) < 32 {
		u.popups = append(u.popups, e.TargetInfo.TargetID)
	}
	u.front = "" // Chrome shows the new tab
}

// seen gives target id its stable index (first seen, first listed).
func (u *user) seen(id target.ID) {
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
	var live []target.ID
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
			if p.TargetID == id {
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
		if res.Result != nil && jsonv2.Unmarshal(res.Result.Value, &done, browserJSON) == nil && done {
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
	if err := u.pipe.Call(ctx, "", target.CommandActivateTarget, &target.ActivateTargetParams{TargetID: t.id}, nil); err != nil {
		return err
	}
	u.mu.Lock()
	u.front = t.id
	u.mu.Unlock()
	return nil
}

type netIn struct {
	Static   bool   `json:"static,omitempty" jsonschema:"include successful static resources (documents, images, fonts, scripts, styles); by default only fetch/XHR and failed or blocked requests are listed"`
	Filter   string `json:"filter,omitempty" jsonschema:"only requests whose URL matches this regular expression, like /api/.*user"`
	All      bool   `json:"all,omitempty" jsonschema:"all kept requests of the tab, not only those since the last navigation"`
	Blocked  bool   `json:"blockedOnly,omitempty" jsonschema:"list only the requests the guard blocked"`
	Filename string `json:"filename,omitempty" jsonschema:"ignored: results are returned inline, never written to files"`
}

// tabBlocks returns the user's blocks shown on t: a block of another
// tab's main frame is that tab's; a subframe's or a connection's is shown
// on every tab. Called by the call holding sem (u.tabs), holding u.mu.
func (u *user) tabBlocks(t *tab) []blockEntry {
	var out []blockEntry
	for _, b := range u.blocks {
		if o := u.tabs[target.ID(b.FrameID)]; b.FrameID == t.frame() || o == nil || o.loopClosed {
			out = append(out, b)
		}
	}
	return out
}

// writeBlocks lists the guard's blocks since the tab's last navigation
// (mark), or all kept ones; the same refusal repeated (the browser's own
// background connections retry) is one line with its count. It returns
// how many earlier blocks it left out.
func writeBlocks(b *strings.Builder, blocks []blockEntry, mark int, all bool) int {
	type key struct{ kind, url, reason string }
	var order []key
	count := map[key]int{}
	earlier, shown := 0, 0
	for _, bl := range blocks {
		if !all && bl.seq <= mark {
			earlier++
			continue
		}
		k := key{bl.ResourceType, bl.URL, bl.Reason}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
		shown++
	}
	if shown == 0 {
		return earlier
	}
	fmt.Fprintf(b, "Blocked by cdpguard: %d request(s).\n", shown)
	for _, k := range order {
		host := blockEntry{URL: k.url}.host()
		fmt.Fprintf(b, "BLOCKED %s %s (host %s): %s", k.kind, k.url, host, k.reason)
		if n := count[k]; n > 1 {
			fmt.Fprintf(b, " (%d times)", n)
		}
		b.WriteString("\n")
	}
	return earlier
}

// blockOf returns the guard's block of e's URL among blocks, if any.
func blockOf(blocks []blockEntry, e netEntry) (blockEntry, bool) {
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].URL == clip(e.url, 500) {
			return blocks[i], true
		}
	}
	return blockEntry{}, false
}

func (s *Server) toolNetwork(ctx context.Context, u *user, in netIn) (*mcp.CallToolResult, error) {
	var filter *regexp.Regexp
	if in.Filter != "" {
		var err error
		// As @playwright/mcp's new RegExp(filter): slashes are literal.
		if filter, err = regexp.Compile(in.Filter); err != nil {
			return nil, fmt.Errorf("filter %q is not a valid regular expression (RE2 syntax): %w", clip(in.Filter, 100), err)
		}
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	entries := append([]netEntry(nil), t.net...)
	gen := t.gen
	blocks := u.tabBlocks(t)
	mark := t.blockMark
	u.mu.Unlock()
	var b strings.Builder
	earlierBlocks := writeBlocks(&b, blocks, mark, in.All)
	if in.Blocked && b.Len() == 0 {
		fmt.Fprintf(&b, "Blocked by cdpguard since the last navigation: none (%d before it; pass all: true).\n", earlierBlocks)
	}
	if !in.Blocked {
		var lines []string
		older, static := 0, 0
		for _, e := range entries {
			bl, isBlocked := blockOf(blocks, e)
			switch {
			case !in.All && e.gen < gen:
				older++
				continue
			case filter != nil && !filter.MatchString(e.url):
				continue
			case !in.Static && !isBlocked && e.failed == "" && e.status >= 200 && e.status < 400 && e.kind != "Fetch" && e.kind != "XHR":
				static++
				continue
			}
			st := fmt.Sprint(e.status)
			if e.failed != "" {
				st = "failed: " + e.failed
			} else if e.status == 0 {
				st = "pending"
			}
			line := fmt.Sprintf("%d. %s %s %s [%s]", e.n, e.method, clip(e.url, 300), e.kind, st)
			if isBlocked {
				line += " BLOCKED by cdpguard: " + bl.Reason
			}
			lines = append(lines, line)
		}
		fmt.Fprintf(&b, "Requests of this tab (numbered; the last %d kept): %d shown.\n", netKeep, len(lines))
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
		if static > 0 {
			fmt.Fprintf(&b, "(%d successful static request(s) not shown; pass static: true.)\n", static)
		}
		if older > 0 || earlierBlocks > 0 {
			fmt.Fprintf(&b, "(%d request(s) and %d block(s) from before the last navigation not shown; pass all: true.)\n", older, earlierBlocks)
		}
	}
	return textResult(cut(strings.TrimRight(b.String(), "\n"), readSection) + ignoredFile(in.Filename)), nil
}
