package cdpguard

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/relay"
)

// agentInputQuiet is how long after an agent's last Input.* command a click
// on the "Allow" button is still taken for the agent's: CDP input events
// are trusted by the page (isTrusted, user activation), so only the guard,
// which sees every agent command, can tell them from a human's.
const agentInputQuiet = time.Second

// agentInputStale bounds how long an Input.* command with no reply counts
// as in flight (an agent that went away leaves its reply unread).
const agentInputStale = 10 * time.Second

// inputTracker follows every agent's Input.* commands, browser-wide.
type inputTracker struct {
	mu       sync.Mutex
	next     uint64
	inflight map[uint64]time.Time
	last     time.Time // when the last one was answered
}

// begin records an Input.* command about to be forwarded; done is called
// with its reply.
func (t *inputTracker) begin(now time.Time) (done func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.inflight == nil {
		t.inflight = map[uint64]time.Time{}
	}
	t.next++
	id := t.next
	t.inflight[id] = now
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.inflight, id)
		t.last = time.Now()
	}
}

// busy returns why an input event seen now may be an agent's, or "".
func (t *inputTracker) busy(now time.Time) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for id, at := range t.inflight {
		if now.Sub(at) > agentInputStale {
			delete(t.inflight, id)
			continue
		}
		n++
	}
	if n > 0 {
		return fmt.Sprintf("an agent's input command (Input.*, or one that moves or raises a window) was in flight (%d)", n)
	}
	if !t.last.IsZero() && now.Sub(t.last) < agentInputQuiet {
		return fmt.Sprintf("an agent sent input (Input.*, or moved or raised a window) %v before the click; a human's click must come at least %v after any agent's", now.Sub(t.last).Round(time.Millisecond), agentInputQuiet)
	}
	return ""
}

// windowCommands change which page is in front or where the button is on
// the screen without any input, so a human's click right after one may
// land on a button the human never saw: they count as input. (e2e
// TestRedTeamControls/other-window: an agent raised a window it had kept
// behind another until the button was armed; the page saw neither a focus
// nor a visibility change.)
var windowCommands = map[string]bool{
	"Target.activateTarget":              true,
	"Target.createTarget":                true,
	"Target.closeTarget":                 true,
	"Page.bringToFront":                  true,
	"Page.close":                         true,
	"Browser.setWindowBounds":            true,
	"Emulation.setDeviceMetricsOverride": true,
	"Emulation.setVisibleSize":           true,
	"Emulation.setPageScaleFactor":       true,
}

// trackInput follows an agent's Input.* (or window) command that is about
// to reach the browser, until its reply.
func (g *Guard) trackInput(cmd relay.Command, v relay.Verdict) relay.Verdict {
	if g.ctl == nil || !(strings.HasPrefix(cmd.Method, "Input.") || windowCommands[cmd.Method]) || v.Refuse != "" || v.Local != nil {
		return v
	}
	done := g.ctl.input.begin(time.Now())
	return relay.Combine(relay.Verdict{OnReply: func(result, errRaw []byte) ([]byte, []byte) {
		done()
		return result, errRaw
	}}, v)
}

// allowClick is what js/controls.js reports about a click on "Allow".
type allowClick struct {
	Action  string `json:"action"`
	Trusted bool   `json:"trusted"`
	Active  bool   `json:"active"`
	Armed   bool   `json:"armed"`
	Visible *bool  `json:"visible"`
	// Label is the button's text when clicked; Tampered says something
	// other than the controls changed their DOM (an agent reaches the
	// closed shadow root with DOM.* and pierce: it rewrote the label to
	// name another host, e2e TestRedTeamControls/tamper-label).
	Label    string `json:"label"`
	Tampered bool   `json:"tampered"`
}

// bindingCalled takes Runtime.bindingCalled on the guard's page session
// (read loop; never blocks). A call is honoured only when every check
// passes; the host granted is the guard's own record of the explained
// block, whatever the payload says.
func (c *controls) bindingCalled(session string, params []byte) {
	var p struct {
		Name      string `json:"name"`
		Payload   string `json:"payload"`
		ContextID int64  `json:"executionContextId"`
	}
	if jsonv2.Unmarshal(params, &p) != nil || p.Name != c.binding {
		return
	}
	now := time.Now()
	c.mu.Lock()
	target := c.sessions[session]
	pg := c.pages[target]
	var why string
	var x *explained
	switch {
	case pg == nil:
		why = "not a page the guard set up"
	case p.ContextID == 0 || p.ContextID != pg.ctxID:
		why = fmt.Sprintf("execution context %d is not the guard's controls world of the page's main frame", p.ContextID)
	case pg.explain == nil || !pg.explain.committed:
		why = "the page is not the explanation page of a blocked navigation"
	case pg.explain.granted || pg.explain.busy:
		why = "already granted"
	default:
		x = pg.explain
	}
	if why == "" {
		why = clickRefusal(p.Payload)
	}
	if why == "" {
		why = labelRefusal(p.Payload, x.host)
	}
	if why == "" {
		why = c.input.busy(now)
	}
	if why != "" {
		if x != nil {
			x.refused++
		}
		c.mu.Unlock()
		c.g.log.Warn("controls: grant refused", "target", target, "why", why)
		if pg != nil {
			c.noteOn(target, "Not allowed: "+why)
		}
		return
	}
	x.busy = true
	c.mu.Unlock()
	c.g.wg.Add(1)
	go func() { // ends with the grant and the reload (bounded)
		defer c.g.wg.Done()
		c.grant(target, session, x)
	}()
}

// clickRefusal returns why the world's report of a click does not show a
// human's decision, or "".
func clickRefusal(payload string) string {
	var a allowClick
	if err := jsonv2.Unmarshal([]byte(payload), &a); err != nil {
		return "unreadable report from the controls world"
	}
	switch {
	case a.Action != "allow":
		return fmt.Sprintf("unknown action %q", a.Action)
	case !a.Trusted:
		return "the click was not a trusted input event (a script's click)"
	case !a.Active:
		return "the click came with no user activation"
	case !a.Armed:
		return "the button was clicked before it was shown long enough to be read"
	case a.Visible != nil && !*a.Visible:
		return "the button was covered or not fully visible when clicked"
	case a.Tampered:
		return "the controls on the page were changed by something other than cdpguard"
	}
	return ""
}

// labelRefusal returns why the button the human clicked did not name host,
// or "": the host granted is the guard's record, so the button must have
// said exactly that.
func labelRefusal(payload, host string) string {
	var a allowClick
	if err := jsonv2.Unmarshal([]byte(payload), &a); err != nil {
		return "unreadable report from the controls world"
	}
	if want := "Allow " + host + " for this session"; a.Label != want {
		return fmt.Sprintf("the button said %q, not %q", truncateReason(a.Label), want)
	}
	return ""
}

// grant grants the explained host to the page's user for this session and
// opens the blocked URL again.
func (c *controls) grant(target, session string, x *explained) {
	user, err := c.g.grantHost(target, x.host, "controls")
	c.mu.Lock()
	x.busy = false
	if err == nil {
		x.granted = true
	} else {
		x.refused++
	}
	c.mu.Unlock()
	if err != nil {
		c.g.log.Warn("controls: grant refused", "target", target, "host", x.host, "why", err)
		c.noteOn(target, "Not allowed: "+err.Error())
		return
	}
	c.g.log.Info("controls: host allowed by a human click", "target", target, "host", x.host, "user", user)
	c.noteOn(target, "")
	ctx, cancel := context.WithTimeout(c.g.ctx, 5*time.Second)
	defer cancel()
	if _, err := c.g.mux.Call(ctx, session, "Page.navigate", map[string]any{"url": x.url}); err != nil {
		c.g.log.Debug("controls: reload after grant failed", "target", target, "err", err)
	}
}
