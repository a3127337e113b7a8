package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/e2e/headed"
)

// timedRedTeamControls attacks the controls (issue 12) as a hostile agent
// and a hostile page, beyond the forgery list, in a headed
// Chromium the guard is attached to. Each attack aims at its own real
// listener on a host outside the allowlist; the sweep at the end fails on
// any request or connection one of them saw. A human's click on the real
// button (the control) must grant its host, for alice only.
func timedRedTeamControls(t *testing.T) {
	path := needHeaded(t)
	if directMode() {
		t.Skip("the controls are the guard's; nothing to attack in a plain Chromium")
	}
	e := rcSetup(t, path)
	// Each attack has a bound of its own: one shared bound let a slow
	// attack on a busy machine fail every attack after it (CI, 2026-12-02).
	run := func(name string, f func(ctx context.Context, t *testing.T, e *rcEnv)) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			f(ctx, t, e)
		})
	}
	run("debugger-condition", rcDebuggerCondition)
	run("reveal-late", rcRevealLate)
	run("background-tab", rcBackgroundTab)
	run("other-window", rcOtherWindow)
	run("move-under-pointer", rcMoveUnderPointer)
	run("move-while-blocked", rcMoveWhileBlocked)
	run("move-by-animation", rcMoveByAnimation)
	run("move-out-of-top-layer", rcMoveOutOfTopLayer)
	run("quiet-while-blocked", rcQuietWhileBlocked)
	run("debugger-pause", rcDebuggerPause)
	run("switch-document", rcSwitchDocument)
	run("history-back", rcHistoryBack)
	run("tamper-label", rcTamperLabel)
	run("overlay", rcOverlay)
	run("names", rcNames)
	run("human-control", rcHumanControl)
	run("agent-input", rcAgentInput)
	run("sweep", func(ctx context.Context, t *testing.T, e *rcEnv) { e.sweep(ctx, t) })
}

// rcDebuggerCondition: alice finds the controls script by guessing script
// ids (Debugger.getScriptSource), then sets a breakpoint in it whose
// condition (run in the controls world, where the breakpoint is) calls the
// binding with a forged report, later than the guard's quiet window.
func rcDebuggerCondition(ctx context.Context, t *testing.T, e *rcEnv) {
	src, err := os.ReadFile("../js/controls.js")
	if err != nil {
		t.Fatalf("the controls' source: %v", err)
	}
	v := e.victim(t, "rc-debugger")
	p := e.explain(ctx, t, v, false)
	rcMust(t, "Debugger.enable", ignore(e.alice.Call(ctx, p.agent, "Debugger.enable", nil)))
	defer func() { _, _ = e.alice.Call(ctx, p.agent, "Debugger.disable", nil) }()
	script := ""
	for id := 1; id <= 400 && script == ""; id++ {
		res, err := e.alice.Call(ctx, p.agent, "Debugger.getScriptSource", map[string]any{"scriptId": strconv.Itoa(id)})
		if err != nil {
			continue
		}
		var s struct {
			ScriptSource string `json:"scriptSource"`
		}
		if json.Unmarshal(res, &s) == nil && s.ScriptSource == string(src) {
			script = strconv.Itoa(id)
		}
	}
	if script == "" {
		t.Logf("the controls script is not readable by guessing script ids (good)")
		return
	}
	t.Logf("alice read the controls script by guessing its id: %s", script)
	// A line in the intersection observer's callback.
	i := strings.Index(string(src), "es[es.length - 1].isVisible")
	if i < 0 {
		t.Fatalf("no intersection observer callback in js/controls.js to break in")
	}
	before := string(src[:i])
	line := strings.Count(before, "\n")
	col := len(before) - strings.LastIndex(before, "\n") - 1
	cond := `(() => { if (!globalThis.__rc) { globalThis.__rc = 1; setTimeout(() => { const f = globalThis[state.binding];
		if (typeof f === 'function') f(JSON.stringify({action: 'allow', trusted: true, active: true, armed: true, visible: true})); }, 1300); } return false; })()`
	_, err = e.alice.Call(ctx, p.agent, "Debugger.setBreakpoint", map[string]any{
		"location": map[string]any{"scriptId": script, "lineNumber": line, "columnNumber": col}, "condition": cond})
	if err != nil {
		t.Logf("conditional breakpoint in the controls refused: %v", err)
		return
	}
	// The intersection observer runs its callback when the badge's
	// visibility changes; the page's main world can change it.
	n := len(e.log.about(p.target))
	e.agentEval(ctx, t, p, `(() => { const h = document.querySelector('cdpguard-controls');
		h.style.setProperty('opacity', '0.5', 'important'); setTimeout(() => h.style.setProperty('opacity', '1', 'important'), 300); })()`)
	t.Logf("guard: %q", e.decided(t, p, n, 3*time.Second))
}

// rcRevealLate: the page keeps the controls invisible (opacity 0) long
// after the button was made, then shows it just before the human clicks
// where something else was: the button was visible for 250 ms.
func rcRevealLate(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-reveal")
	p := e.explain(ctx, t, v, false)
	e.agentEval(ctx, t, p, `document.querySelector('cdpguard-controls').style.setProperty('opacity', '0', 'important'), 1`)
	time.Sleep(rcArm + 400*time.Millisecond)
	e.agentEval(ctx, t, p, `document.querySelector('cdpguard-controls').style.setProperty('opacity', '1', 'important'), 1`)
	time.Sleep(max(0, rcQuiet-rcArm-400*time.Millisecond) + 250*time.Millisecond)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	if got := e.decided(t, p, n, 500*time.Millisecond); len(got) > n {
		t.Logf("guard: %q", got[n:])
	} else {
		t.Logf("the click did nothing: the page's change to the badge redrew it, and the new button is disabled while it arms")
	}
}

// rcBackgroundTab: alice prepares the explanation page in a background tab
// until its button is armed, then brings the tab to the front just before
// the human clicks.
func rcBackgroundTab(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-background")
	p := e.explain(ctx, t, v, true)
	time.Sleep(rcQuiet)
	rcMust(t, "activateTarget", ignore(e.alice.Call(ctx, "", "Target.activateTarget", map[string]any{"targetId": p.target})))
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	t.Logf("guard: %q", e.decided(t, p, n, 2*time.Second))
}

// rcOtherWindow: alice prepares the explanation page in a window of its
// own, puts another window of hers over it until the button is armed, then
// raises the explanation page's window just before the human clicks.
func rcOtherWindow(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-window")
	p := e.explainIn(ctx, t, v, map[string]any{"newWindow": true})
	res, err := e.alice.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "newWindow": true})
	rcMust(t, "covering window", err)
	var ct struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &ct)
	rcMust(t, "raise the cover", ignore(e.alice.Call(ctx, "", "Target.activateTarget", map[string]any{"targetId": ct.TargetID})))
	time.Sleep(rcQuiet)
	rcMust(t, "raise the explanation", ignore(e.alice.Call(ctx, "", "Target.activateTarget", map[string]any{"targetId": p.target})))
	// The human clicks on the screen (X input) 250 ms later: the click lands
	// on whatever window is on top by then.
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	e.xClick(ctx, t, p)
	t.Logf("guard: %q", e.decided(t, p, n, 2*time.Second))
}

// rcMoveUnderPointer: the human is about to click at a point where the
// button is not; the page's main world translates the document (a
// translation keeps the button "visible" to IntersectionObserver v2) so the
// armed button lands under the pointer 250 ms before the click.
func rcMoveUnderPointer(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-move")
	p := e.explain(ctx, t, v, false)
	time.Sleep(rcQuiet)
	target := headed.Point{X: 300, Y: 200}
	dx, dy := e.moveRoot(ctx, t, p, target)
	// Back home until the button is armed again, then one clean jump.
	e.agentEval(ctx, t, p, `document.documentElement.style.transform = '', 1`)
	time.Sleep(rcArm)
	e.agentEval(ctx, t, p, fmt.Sprintf(`document.documentElement.style.transform = 'translate(%fpx, %fpx)', 1`, dx, dy))
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	rcMust(t, "human click", headed.DispatchClick(ctx, e.chrome.Direct, p.human, target))
	got := e.decided(t, p, n, 2*time.Second)
	if len(got) == n {
		t.Logf("the click at %v did not reach the moved button", target)
	}
	t.Logf("guard: %q", got)
}

// moveRoot translates the page's root so that the Allow button's centre
// lands on target, and returns the translation. A transform makes the root
// the fixed host's containing block, so it measures where the button went
// and corrects once. The controls are in the top layer, which the root's
// transform does not move: the button stays where it was and an attack
// built on this misses it (the guess is then meaningless).
func (e *rcEnv) moveRoot(ctx context.Context, t *testing.T, p *rcPage, target headed.Point) (dx, dy float64) {
	t.Helper()
	dx, dy = target.X-p.at.X, target.Y-p.at.Y
	for i := 0; i < 2; i++ {
		e.agentEval(ctx, t, p, fmt.Sprintf(`document.documentElement.style.transform = 'translate(%fpx, %fpx)', 1`, dx, dy))
		n, err := headed.FindNode(ctx, e.chrome.Direct, p.human, headed.ByTag("button", "Allow "+p.v.name))
		rcMust(t, "find the moved button", err)
		at, err := headed.Center(ctx, e.chrome.Direct, p.human, n.BackendNodeID)
		rcMust(t, "centre of the moved button", err)
		dx, dy = dx+target.X-at.X, dy+target.Y-at.Y
	}
	return dx, dy
}

// rcMoveWhileBlocked: the button first sits, armed, where the human will
// click; then the page shows it elsewhere and blocks its main thread, so
// that no timer can see where it is; the human's click is queued; the page
// puts the button back under the pointer in the same task that ends the
// block, and the queued click is hit-tested there. A check that samples the
// button's place with a timer never saw it move (a fresh-clone run at load
// 27 let move-under-pointer through the same way: its timer starved). Two
// defences stop it now, each alone (the first was checked before the
// second existed): the controls' place observer, told per drawn frame, and
// the top layer, where the root's transform does not move the controls (the
// click then misses the button).
func rcMoveWhileBlocked(ctx context.Context, t *testing.T, e *rcEnv) {
	// Home, drawn; then 3 s of a blocked main thread; then back.
	rcArmedThenMoved(ctx, t, e, "rc-move-blocked", "", `(() => {
		const root = document.documentElement.style;
		root.transform = '';
		requestAnimationFrame(() => setTimeout(() => {
			const end = performance.now() + 3000;
			while (performance.now() < end) {}
			root.transform = 'translate(%fpx, %fpx)';
		}, 0));
		return 1;
	})()`)
}

// rcMoveByAnimation is move-while-blocked with the move made by the
// compositor: an animation of the root's transform, started where the
// button is armed, shows it elsewhere while the page's main thread is
// blocked (no frame of the main thread draws that), and ends back under
// the pointer before the queued click is hit-tested. The place observer
// cannot see that (no main-thread frame draws it); the top layer does not
// move with the root.
func rcMoveByAnimation(ctx context.Context, t *testing.T, e *rcEnv) {
	rcArmedThenMoved(ctx, t, e, "rc-move-animated", "", rcAnimateAway)
}

// rcMoveOutOfTopLayer is move-by-animation after the page took the controls
// out of the top layer, with their toggle events stopped before they reach
// the controls' listeners, so that the root's transform moves them again.
func rcMoveOutOfTopLayer(ctx context.Context, t *testing.T, e *rcEnv) {
	rcArmedThenMoved(ctx, t, e, "rc-move-untopped", `(() => {
		for (const type of ['beforetoggle', 'toggle']) {
			window.addEventListener(type, (e) => e.stopImmediatePropagation(), true);
		}
		document.querySelector('cdpguard-controls').hidePopover();
		return 1;
	})()`, rcAnimateAway)
}

// rcAnimateAway animates the root's transform from there (the button under
// the pointer) to none and back over 3 s, and blocks the main thread for
// those 3 s, so that no main-thread frame draws the way.
const rcAnimateAway = `(() => {
		const there = 'translate(%fpx, %fpx)';
		document.documentElement.animate([
			{ transform: there }, { transform: 'none', offset: 0.02 },
			{ transform: 'none', offset: 0.98 }, { transform: there },
		], { duration: 3000, fill: 'forwards' });
		requestAnimationFrame(() => setTimeout(() => {
			const end = performance.now() + 3200;
			while (performance.now() < end) {}
		}, 0));
		return 1;
	})()`

// rcArmedThenMoved runs the page script prep (if any) on victim's
// explanation page, arms its button under the pointer, runs the page script
// move (a format of the root's translation to there, dx and dy), and a
// second later the human clicks there.
func rcArmedThenMoved(ctx context.Context, t *testing.T, e *rcEnv, victim, prep, move string) {
	v := e.victim(t, victim)
	p := e.explain(ctx, t, v, false)
	if prep != "" {
		e.agentEval(ctx, t, p, prep)
	}
	time.Sleep(rcQuiet)
	target := headed.Point{X: 300, Y: 200}
	dx, dy := e.moveRoot(ctx, t, p, target)
	time.Sleep(rcArm) // armed under the pointer
	e.agentEval(ctx, t, p, fmt.Sprintf(move, dx, dy))
	time.Sleep(time.Second)
	n := len(e.log.about(p.target))
	rcMust(t, "human click", headed.DispatchClick(ctx, e.chrome.Direct, p.human, target))
	t.Logf("guard: %q", e.decided(t, p, n, 2*time.Second))
}

// rcQuietWhileBlocked: alice sends input (to another tab of hers) 250 ms
// before the human's click, and the page blocks its main thread for 1.5 s
// so that the click, and the report of it, reach the guard after the
// quiet window. The window is measured to the click itself.
//
// The 250 ms is the test's aim, not a fact: on a loaded machine xdotool
// can start a second late, and a click that late is a human's by the rules
// (CI at load 31, 2026-12-07). The page tells how long after alice's
// blocking script (sent after her input, so no earlier than the guard saw
// that input) the click happened, by the event's own time, which is what
// the controls report too: an attempt whose click came later than the
// window is left out of the sweep and tried again with a new host, three
// times at most.
func rcQuietWhileBlocked(ctx context.Context, t *testing.T, e *rcEnv) {
	const margin = 150 * time.Millisecond // below the guard's 1 s window
	for try := 1; ; try++ {
		name := "rc-quiet-blocked"
		if try > 1 {
			name += "-" + strconv.Itoa(try)
		}
		v := e.victim(t, name)
		gap, upTo, ok := rcQuietWhileBlockedOnce(ctx, t, e, v)
		if !ok || gap+upTo < time.Second-margin {
			t.Logf("the click came %v to %v after alice's input (recorded: %v)", gap, gap+upTo, ok)
			return // staged as meant: the sweep checks the host
		}
		// Keyed by the victim's host name, as the sweep reads it (keyed by
		// name, the excuse was never found: fresh-clone run 33).
		e.excused[v.name] = fmt.Sprintf("the click came %v to %v after alice's input, maybe past the quiet window", gap, gap+upTo)
		t.Logf("try %d: %s", try, e.excused[v.name])
		if try == 3 {
			t.Fatalf("three tries could not click within the quiet window after alice's input (last: %v): the attack was never staged", gap)
		}
	}
}

// rcQuietWhileBlockedOnce stages rcQuietWhileBlocked on victim v and
// returns how long after alice's input the click happened: at least gap
// (from the page's block, which starts after her input's answer, to the
// click, by the page's clock) and about at most gap+upTo (upTo: from her
// input's answer to the block's, by the test's clock: under load that eval
// can come late, and the guard's quiet window runs from the input's
// answer; the answer's way from the guard to the test is in the margin),
// and whether the page saw the click.
func rcQuietWhileBlockedOnce(ctx context.Context, t *testing.T, e *rcEnv, v *rcVictim) (gap, upTo time.Duration, ok bool) {
	p := e.explain(ctx, t, v, false)
	res, err := e.alice.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank", "background": true})
	rcMust(t, "alice's other tab", err)
	var ct struct {
		TargetID string `json:"targetId"`
	}
	_ = json.Unmarshal(res, &ct)
	other, err := headed.AttachPage(ctx, e.alice, ct.TargetID)
	rcMust(t, "attach alice's other tab", err)
	// The page logs the click's time (capture, on the window: before the
	// controls' own listener) to the test's own connection, since a grant
	// navigates the page away before anyone could ask it.
	logged, stop := e.chrome.Direct.Subscribe(p.human, "Runtime.consoleAPICalled")
	defer stop()
	rcMust(t, "the human's Runtime.enable", ignore(e.chrome.Direct.Call(ctx, p.human, "Runtime.enable", nil)))
	e.agentEval(ctx, t, p, `addEventListener('click', (ev) => console.debug('rc-clicked-after', ev.timeStamp - globalThis.__rcBlockAt), {capture: true, once: true}), 1`)
	time.Sleep(max(rcArm, rcQuiet)) // armed, and no input for a while
	// The human's real click (X input: press and release queue together),
	// mapped to the screen before the page blocks.
	screen, err := headed.ScreenPoint(ctx, e.chrome.Direct, p.human, p.target, p.at)
	rcMust(t, "screen point", err)
	// The input first: the other tab may share the page's renderer, whose
	// blocked main thread would hold the input's answer back too.
	sent := time.Now()
	rcMust(t, "alice's input elsewhere", ignore(e.alice.Call(ctx, other, "Input.dispatchMouseEvent", map[string]any{"type": "mouseMoved", "x": 10, "y": 10})))
	inputAt := time.Now()
	e.agentEval(ctx, t, p, `globalThis.__rcBlockAt = performance.now(), setTimeout(() => { const end = performance.now() + 1500; while (performance.now() < end) {} }, 0), 1`)
	upTo = time.Since(inputAt)
	t.Logf("alice's input answered in %v, the block's eval in %v", inputAt.Sub(sent), upTo)
	time.Sleep(250*time.Millisecond - time.Since(inputAt))
	n := len(e.log.about(p.target))
	rcMust(t, "human X click", e.d.Human().Click(ctx, screen))
	t.Logf("guard: %q", e.decided(t, p, n, 3*time.Second))
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := e.chrome.Direct.Wait(wctx, logged, "the page's record of the click")
	if err != nil {
		t.Logf("the page logged no click (%v): the guard had nothing to grant", err)
		return 0, upTo, false
	}
	var c struct {
		Args []struct {
			Value any `json:"value"`
		} `json:"args"`
	}
	_ = json.Unmarshal(msg, &c)
	if len(c.Args) != 2 {
		t.Fatalf("the page's record of the click: %s", msg)
	}
	ms, _ := c.Args[1].Value.(float64)
	return time.Duration(ms * float64(time.Millisecond)), upTo, true
}

// rcDebuggerPause: the human clicks 250 ms after the explanation page's tab
// came to the front (too early: arming restarted), and alice pauses the
// controls' click handler with an event-listener breakpoint until the
// arming time has passed, then turns the debugger off so the handler and
// the binding call run with no agent debugging.
func rcDebuggerPause(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-pause")
	p := e.explain(ctx, t, v, true)
	paused, stop := e.alice.Subscribe(p.agent, "Debugger.paused")
	defer stop()
	rcMust(t, "Debugger.enable", ignore(e.alice.Call(ctx, p.agent, "Debugger.enable", nil)))
	defer func() { _, _ = e.alice.Call(ctx, p.agent, "Debugger.disable", nil) }()
	rcMust(t, "listener breakpoint", ignore(e.alice.Call(ctx, p.agent, "DOMDebugger.setEventListenerBreakpoint", map[string]any{"eventName": "click"})))
	time.Sleep(rcQuiet)
	// The tab comes to the front (not by an agent: by the test's own
	// connection, as a human switching tabs would).
	rcMust(t, "front", ignore(e.chrome.Direct.Call(ctx, "", "Target.activateTarget", map[string]any{"targetId": p.target})))
	time.Sleep(250 * time.Millisecond)
	n := len(e.log.about(p.target))
	click := make(chan error, 1)
	go func() { click <- headed.DispatchClick(ctx, e.chrome.Direct, p.human, p.at) }()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := e.alice.Wait(pctx, paused, "the pause in the click handler")
	cancel()
	if err != nil {
		t.Logf("the human's click did not pause: %v", err)
	} else {
		time.Sleep(rcArm)
	}
	_, _ = e.alice.Call(ctx, p.agent, "DOMDebugger.removeEventListenerBreakpoint", map[string]any{"eventName": "click"})
	_, _ = e.alice.Call(ctx, p.agent, "Debugger.disable", nil)
	if err := <-click; err != nil {
		t.Logf("human click: %v", err)
	}
	got := e.decided(t, p, n, 2*time.Second)
	t.Logf("guard: %q", got[n:])
}

// rcSwitchDocument: the human is about to click an armed button for a
// harmless host; alice navigates the tab to another blocked host, whose
// button appears in the same place, and the human clicks as soon as the
// test finds it. (A 250 ms pause after finding it, with the finding's own
// CDP calls slowed by a fresh-clone run's load, put the click past the
// 600 ms arming twice: the grant was then by the rules.)
func rcSwitchDocument(ctx context.Context, t *testing.T, e *rcEnv) {
	harmless := e.victim(t, "rc-switch-harmless")
	evil := e.victim(t, "rc-switch-evil")
	p := e.explain(ctx, t, harmless, false)
	time.Sleep(rcQuiet)
	rcMust(t, "alice navigates", ignore(e.alice.Call(ctx, p.agent, "Page.navigate", map[string]any{"url": evil.url()})))
	p.v = evil
	e.waitButton(ctx, t, p)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	if got := e.decided(t, p, n, 500*time.Millisecond); len(got) > n {
		t.Logf("guard: %q", got[n:])
	} else {
		t.Logf("the click did nothing: the new button is disabled while it arms")
	}
}

// rcHistoryBack: alice goes from the explanation page of one blocked host
// to another's and back; the human then allows what the button says. Only
// that host may open, not the one the guard saw last.
func rcHistoryBack(ctx context.Context, t *testing.T, e *rcEnv) {
	first := e.victim(t, "rc-history-first")
	second := e.victim(t, "rc-history-second")
	p := e.explain(ctx, t, first, false)
	rcMust(t, "enable Page", ignore(e.alice.Call(ctx, p.agent, "Page.enable", nil)))
	rcMust(t, "to the second", headed.Navigate(ctx, e.alice, p.agent, second.url()))
	res, err := e.alice.Call(ctx, p.agent, "Page.getNavigationHistory", nil)
	rcMust(t, "history", err)
	var h struct {
		CurrentIndex int `json:"currentIndex"`
		Entries      []struct {
			ID  int    `json:"id"`
			URL string `json:"url"`
		} `json:"entries"`
	}
	_ = json.Unmarshal(res, &h)
	if h.CurrentIndex < 1 {
		t.Fatalf("no history to go back in: %s", res)
	}
	rcMust(t, "back", ignore(e.alice.Call(ctx, p.agent, "Page.navigateToHistoryEntry", map[string]any{"entryId": h.Entries[h.CurrentIndex-1].ID})))
	e.waitButton(ctx, t, p) // p.v is first: the button must name it again
	time.Sleep(rcQuiet)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	got := e.decided(t, p, n, 2*time.Second)
	t.Logf("guard: %q", got)
	if strings.Contains(strings.Join(got[n:], " "), "host="+first.name) {
		e.granted[first.name] = true // what the button said: the human's decision
	}
}

// rcTamperLabel: alice rewrites the button's text (DOM.setNodeValue inside
// the closed shadow root, reached with pierce) to name a harmless host,
// 50 ms before the human clicks what it says. The controls must draw
// themselves afresh (a new button that arms again) and the button must
// name the real host once more.
func rcTamperLabel(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-tamper")
	p := e.explain(ctx, t, v, false)
	time.Sleep(rcQuiet)
	root, err := headed.Document(ctx, e.alice, p.agent)
	rcMust(t, "alice's DOM", err)
	text := root.Find(func(n *headed.Node) bool {
		return n.NodeName == "#text" && strings.HasPrefix(n.NodeValue, "Allow "+v.name)
	})
	if text == nil {
		t.Logf("alice does not see the button's text")
		return
	}
	n := len(e.log.about(p.target))
	if _, err := e.alice.Call(ctx, p.agent, "DOM.setNodeValue", map[string]any{"nodeId": text.NodeID, "value": "Allow docs.python.org for this session"}); err != nil {
		t.Logf("DOM.setNodeValue on the button refused: %v", err)
		return
	}
	time.Sleep(50 * time.Millisecond)
	e.humanClick(ctx, t, p)
	if got := e.decided(t, p, n, 500*time.Millisecond); len(got) > n {
		t.Logf("guard: %q", got[n:])
	} else {
		t.Logf("the click did nothing: the redrawn button is disabled while it arms")
	}
	if _, err := headed.FindNode(ctx, e.chrome.Direct, p.human, headed.ByTag("button", "Allow "+v.name+" for this session")); err != nil {
		t.Errorf("after the rewrite the button does not name %s again: %v", v.name, err)
	}
}

// rcOverlay: the page lays a decoy over the button that lets clicks
// through (pointer-events: none). The controls are in the top layer, above
// any z-index, so the decoy is shown in the top layer too, after them.
func rcOverlay(ctx context.Context, t *testing.T, e *rcEnv) {
	v := e.victim(t, "rc-overlay")
	p := e.explain(ctx, t, v, false)
	e.agentEval(ctx, t, p, fmt.Sprintf(`(() => { const d = document.createElement('div');
		d.textContent = 'Click to continue';
		d.popover = 'manual';
		d.style.cssText = 'position:fixed;inset:auto;margin:0;border:0;padding:0;left:%fpx;top:%fpx;width:300px;height:60px;transform:translate(-50%%,-50%%);background:#eee;z-index:2147483647;pointer-events:none';
		document.documentElement.appendChild(d); d.showPopover(); return 1; })()`, p.at.X, p.at.Y))
	time.Sleep(rcQuiet)
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	t.Logf("guard: %q", e.decided(t, p, n, 2*time.Second))
}

// rcHumanControl: the human's click on the real button grants its host to
// alice (the guard reloads the page, which reaches the listener), a second
// tab's host stays blocked, and bob still cannot reach the granted host.
func rcHumanControl(ctx context.Context, t *testing.T, e *rcEnv) {
	ok := e.victim(t, "rc-granted")
	other := e.victim(t, "rc-other-tab")
	// The other tab first: the human clicks in the tab in front.
	e.explain(ctx, t, other, false)
	p := e.explain(ctx, t, ok, false)
	time.Sleep(max(rcArm, rcQuiet))
	n := len(e.log.about(p.target))
	e.humanClick(ctx, t, p)
	deadline := time.Now().Add(5 * time.Second)
	for ok.hits.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if ok.hits.Load() == 0 {
		t.Fatalf("control: the human's click did not open %s; guard: %q", ok.name, e.decided(t, p, n, time.Second))
	}
	e.granted[ok.name] = true
	_, s, err := headed.OpenPage(ctx, e.bob, "about:blank")
	rcMust(t, "bob's page", err)
	_ = headed.Navigate(ctx, e.bob, s, ok.url()+"?bob")
	time.Sleep(300 * time.Millisecond)
	if got := ok.requested("bob"); got > 0 {
		t.Errorf("LEAK: bob reached %s, which a human allowed for alice only (%d requests)", ok.name, got)
	}
	ok.mu.Lock()
	t.Logf("%s saw %q", ok.name, ok.paths)
	ok.mu.Unlock()
}
