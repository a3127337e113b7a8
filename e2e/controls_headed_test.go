package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/headed"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// TestControlsHeaded shows the controls in a visible browser on Xvfb, as a
// developer would use them: `serve --headed` with a human clicking with
// real X input (xdotool), and `attach` with the human clicking over the
// test's own direct connection. The human opens the badge's panel, then
// allows the blocked host on its explanation page; the agent's user then
// reaches it. Screenshots are saved as test artifacts
// (CDPGUARD_UPDATE_DOCS=1 also refreshes docs/controls.png).
func TestControlsHeaded(t *testing.T) {
	parallelSuite(t) // own Xvfb display, browsers and guards
	if directMode() {
		t.Skip("the controls are the guard's")
	}
	path := needHeaded(t)
	d := headed.StartXvfb(t)
	h := testhosts.Start(t)
	cfg := guardConfig(t)
	cfg.Controls = true

	t.Run("serve", func(t *testing.T) {
		g := headed.LaunchGuard(t, d, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		agent := dialAgent(ctx, t, g.URL(), "alice")
		target, session, err := headed.OpenPage(ctx, agent, userURL(h, "alice"))
		if err != nil {
			t.Fatalf("agent opens the allowed page: %v", err)
		}
		human := d.Human()
		// Open the panel: the human clicks the badge.
		badge := findControls(ctx, t, agent, session, "cdpguard active")
		at, err := headed.Center(ctx, agent, session, badgeLine(t, badge).BackendNodeID)
		if err != nil {
			t.Fatalf("badge centre: %v", err)
		}
		screen, err := headed.ScreenPoint(ctx, agent, session, target, at)
		if err != nil {
			t.Fatalf("screen point: %v", err)
		}
		if err := human.Click(ctx, screen); err != nil {
			t.Fatalf("human click on the badge: %v", err)
		}
		findControls(ctx, t, agent, session, "Reachable origins")
		shot(ctx, t, d, "serve-panel.png", false)

		// The explanation page: the human allows the host.
		if err := headed.Navigate(ctx, agent, session, h.Forbidden.Origin()+testhosts.HitPath("headed-serve")); err != nil {
			t.Fatalf("navigate to the blocked host: %v", err)
		}
		btn := findControls(ctx, t, agent, session, "for this session")
		shot(ctx, t, d, "serve-explanation.png", true)
		at, err = headed.Center(ctx, agent, session, allowIn(t, btn).BackendNodeID)
		if err != nil {
			t.Fatalf("button centre: %v", err)
		}
		if screen, err = headed.ScreenPoint(ctx, agent, session, target, at); err != nil {
			t.Fatalf("screen point: %v", err)
		}
		time.Sleep(agentQuiet)
		if err := human.Click(ctx, screen); err != nil {
			t.Fatalf("human click on Allow: %v", err)
		}
		wantGranted(ctx, t, g, h, "headed-serve")
	})

	t.Run("attach", func(t *testing.T) {
		c := headed.StartChromium(t, d, path, "--host-resolver-rules=MAP *.test 127.0.0.1")
		actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		g, err := cdpguard.Attach(actx, c.URL, cfg)
		if err != nil {
			t.Fatalf("cdpguard.Attach: %v", err)
		}
		cdptest.CloseOnCleanup(t, g)
		cdptest.WaitHTTP(t, g.URL()+"/readyz", "ok", 20*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		agent := dialAgent(ctx, t, g.URL(), "alice")
		target, _, err := headed.OpenPage(ctx, agent, h.Forbidden.Origin()+testhosts.HitPath("headed-attach"))
		if err != nil {
			t.Fatalf("agent opens the blocked host: %v", err)
		}
		own, err := headed.AttachPage(ctx, c.Direct, target)
		if err != nil {
			t.Fatalf("direct attach: %v", err)
		}
		btn := findControls(ctx, t, c.Direct, own, "for this session")
		shot(ctx, t, d, "attach-explanation.png", false)
		at, err := headed.Center(ctx, c.Direct, own, allowIn(t, btn).BackendNodeID)
		if err != nil {
			t.Fatalf("button centre: %v", err)
		}
		time.Sleep(agentQuiet)
		if err := headed.DispatchClick(ctx, c.Direct, own, at); err != nil {
			t.Fatalf("human click over the direct connection: %v", err)
		}
		wantGranted(ctx, t, g, h, "headed-attach")
	})
}

// agentQuiet is how long a human's click waits after the agent's last
// input (the guard's window is 1 s) and for the button to arm (600 ms).
const agentQuiet = 1100 * time.Millisecond

// findControls waits for the controls' host element whose text contains
// text, seen through c's DOM view (closed shadow roots pierced).
func findControls(ctx context.Context, t *testing.T, c *cdptest.Client, session, text string) *headed.Node {
	t.Helper()
	for {
		n, err := headed.FindNode(ctx, c, session, headed.ByTag("cdpguard-controls", text))
		if err == nil {
			return n
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no controls showing %q: %v", text, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// badgeLine is the badge inside the controls' shadow root: its last child.
func badgeLine(t *testing.T, host *headed.Node) *headed.Node {
	t.Helper()
	if len(host.ShadowRoots) == 0 || len(host.ShadowRoots[0].Children) == 0 {
		t.Fatalf("the controls have no shadow root content")
	}
	root := host.ShadowRoots[0]
	return root.Children[len(root.Children)-1]
}

// allowIn is the Allow button inside the controls.
func allowIn(t *testing.T, host *headed.Node) *headed.Node {
	t.Helper()
	var found *headed.Node
	var walk func(*headed.Node)
	walk = func(n *headed.Node) {
		if n.LocalName == "button" && strings.HasPrefix(n.Text(), "Allow ") {
			found = n
		}
		for _, k := range append(append([]*headed.Node{}, n.ShadowRoots...), n.Children...) {
			walk(k)
		}
	}
	walk(host)
	if found == nil {
		t.Fatalf("no Allow button in the controls: %s", host.Text())
	}
	return found
}

// shot saves the whole screen as an artifact; docs also refreshes the
// README's image (with CDPGUARD_UPDATE_DOCS=1).
func shot(ctx context.Context, t *testing.T, d *headed.Display, name string, docs bool) {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // let the window paint
	png, err := d.Screenshot()
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	headed.SaveArtifact(t, name, png)
	if docs {
		headed.UpdateDocs(t, "controls.png", png)
	}
}

// wantGranted waits for the blocked page to be loaded from the host after
// the grant, and for alice's /policy to show it.
func wantGranted(ctx context.Context, t *testing.T, g *cdpguard.Guard, h *testhosts.Hosts, name string) {
	t.Helper()
	if err := h.Forbidden.WaitHits(ctx, testhosts.HitPath(name), 1); err != nil {
		t.Fatalf("after the human's click the page was not loaded from the granted host: %v", err)
	}
	if s := policyFor(t, g.URL(), "alice"); !strings.Contains(s, testhosts.ForbiddenName) {
		t.Errorf("alice's /policy does not show the grant: %s", s)
	}
}
