package controls

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// allowClick is what js/controls.js reports about a click on "Allow".
type allowClick struct {
	Action  string `json:"action"`
	Label   string `json:"label"`
	Trusted bool   `json:"trusted"`
	Active  bool   `json:"active"`
	Armed   bool   `json:"armed"`
	Visible *bool  `json:"visible"`
	// Waited is how long the click waited (ms) before the world's handler
	// ran: the page's clock minus the event's own time, both measured in
	// the controls world.
	Waited float64 `json:"waited"`
	// Timed says the event's own time was not later than the page's clock
	// when the handler ran. The arming and the quiet window are both
	// measured at the event's time, so a click dated in the future would
	// pass both; headed Chromium has reported an X click 15 s ahead
	// (e2e RedTeamControls/quiet-while-blocked, 2026-12-07). Its zero
	// value refuses.
	Timed bool `json:"timed"`
	// SentAt is the world's wall clock (Date.now(), ms since the Unix
	// epoch) when it sent the report. The report's way from the handler
	// to the guard (renderer, browser process, pipe: slow on a loaded
	// machine) would otherwise count as time after the click, and shorten
	// the quiet window by as much: e2e
	// TestTimed/RedTeamControls/quiet-while-blocked granted so in a CI
	// run on 2026-12-08. Its zero value refuses.
	SentAt float64 `json:"sentAt"`
}

// bindingCalled takes Runtime.bindingCalled on the guard's page session
// (read loop; never blocks). A call is honoured only when every check
// passes; the host granted is the guard's own record of the explained
// block, whatever the payload says.
func (c *Controls) bindingCalled(session string, params []byte) {
	var p struct {
		Name      string `json:"name"`
		Payload   string `json:"payload"`
		ContextID int64  `json:"executionContextId"`
	}
	if cdpmsg.UnmarshalBrowser(params, &p) != nil || p.Name != c.binding {
		return
	}
	now := time.Now()
	target, _ := c.d.Pages.TargetOf(session)
	c.mu.Lock()
	pg := c.rec(target)
	var why, taint string
	var x *explained
	if pg != nil {
		taint = pg.taintRefusal(p.ContextID)
	}
	switch {
	case pg == nil:
		why = "not a page the guard set up"
	case p.ContextID == 0 || p.ContextID != pg.ctxID:
		why = fmt.Sprintf("execution context %d is not the guard's controls world of the page's main frame", p.ContextID)
	case taint != "":
		why = taint
	case pg.explain == nil || !pg.explain.committed:
		why = "the page is not the explanation page of a blocked navigation"
	case pg.explain.granted || pg.explain.busy:
		why = "already granted"
	default:
		x = pg.explain
	}
	var waited time.Duration
	if why == "" {
		why, waited = clickRefusal(p.Payload, allowLabel(x.host), now)
	}
	if why == "" {
		// Only what can reach this page's button counts: its user's input
		// and debugger, and anyone's window moves (internal/quiet). Lock
		// order: c.mu, then the Owners' and c.dbg.mu (leaves). The quiet
		// window is measured to the click, not to the report's arrival: a
		// page that blocks its main thread holds the human's click back
		// past the window (a loaded machine did the same: e2e
		// RedTeamControls/other-window granted, 2026-12-07). An earlier
		// time only counts more input.
		owner, known := c.d.Owners.OwnerKey(target)
		why = c.input.Busy(owner, known, now.Add(-waited))
		if why == "" {
			why = c.dbg.debugging(owner, known)
		}
	}
	if why != "" {
		if x != nil {
			x.refused++
		}
		level := slog.LevelWarn
		if pg != nil {
			if now.Sub(pg.lastRefusal) < time.Second {
				level = slog.LevelDebug // a loop of forged calls logs once a second
			} else {
				pg.lastRefusal = now
			}
		}
		c.mu.Unlock()
		c.d.Log.Log(context.Background(), level, "controls: grant refused", "target", target, "why", why)
		if pg != nil {
			c.noteOn(target, "Not allowed: "+why)
		}
		return
	}
	x.busy = true
	c.mu.Unlock()
	c.d.Go(func() { // ends with the grant and the reload (bounded)
		c.grant(target, session, x)
	})
}

// allowLabel is the Allow button's text (js/controls.js draws the same).
func allowLabel(host string) string { return "Allow " + host + " for this session" }

// clickRefusal returns why the world's report of a click does not show a
// human's decision, or "". label is what the button must have said: an
// agent can rewrite its text through the DOM domain, so the world reports
// the text it saw at the click.
//
// It also returns how long before now, the report's arrival, the click
// happened: how long it waited for the world's handler and how long the
// report then took to arrive (0 when the report says nothing usable).
func clickRefusal(payload, label string, now time.Time) (string, time.Duration) {
	var a allowClick
	if err := jsonv2.Unmarshal([]byte(payload), &a); err != nil {
		return "unreadable report from the controls world", 0
	}
	return clickWhy(a, label), min(clickWaited(a.Waited)+clickTransit(a.SentAt, now), maxWaited)
}

// clickTransit is how long the report took from the world to the guard,
// by the browser's wall clock against the guard's. A browser clock ahead
// of the guard's counts as 0 (as before the report said when it was
// sent); one behind only moves the click earlier, so that more input
// counts. A browser on another machine with a clock behind the guard's
// by more than the quiet window refuses every click while any agent input
// came in the span (at most maxWaited) it counts back.
func clickTransit(sentAtMs float64, now time.Time) time.Duration {
	ms := float64(now.UnixNano())/1e6 - sentAtMs
	if !(ms > 0) { // NaN too
		return 0
	}
	return clickWaited(ms)
}

// maxWaited bounds the wait a report may claim, so that the duration
// cannot overflow; a longer one counts as this long (every input since
// then counts).
const maxWaited = 10 * time.Minute

// clickWaited converts the report's wait; NaN and negatives are 0.
func clickWaited(ms float64) time.Duration {
	if !(ms > 0) {
		return 0
	}
	if ms > float64(maxWaited/time.Millisecond) {
		return maxWaited
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// clickWhy is clickRefusal's verdict on a decoded report.
func clickWhy(a allowClick, label string) string {
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
	case a.Label != label:
		return fmt.Sprintf("the button's text was changed (%q)", clip.String(a.Label))
	case !a.Timed:
		return "the click's own time was later than the page's clock: its arming and the quiet window before it cannot be measured"
	case !(a.SentAt > 0):
		return "the report did not say when it was sent: the quiet window before the click cannot be measured"
	}
	return ""
}

// grant grants the explained host to the page's user for this session and
// opens the blocked URL again.
func (c *Controls) grant(target, session string, x *explained) {
	user, err := c.d.Grants.GrantHost(target, x.host, "controls")
	c.mu.Lock()
	x.busy = false
	if err == nil {
		x.granted = true
	} else {
		x.refused++
	}
	c.mu.Unlock()
	if err != nil {
		c.d.Log.Warn("controls: grant refused", "target", target, "host", x.host, "why", err)
		c.noteOn(target, "Not allowed: "+err.Error())
		return
	}
	c.d.Log.Info("controls: host allowed by a human click", "target", target, "host", x.host, "user", clip.String(user))
	c.noteOn(target, "")
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	if _, err := c.d.Browser.Call(ctx, session, "Page.navigate", map[string]any{"url": x.url}); err != nil {
		c.d.Log.Debug("controls: reload after grant failed", "target", target, "err", err)
	}
}
