package e2e

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
	"github.com/cdpguard/cdpguard/e2e/cdptest"
	"github.com/cdpguard/cdpguard/e2e/headed"
	"github.com/cdpguard/cdpguard/e2e/testhosts"
)

// needHeaded is needBrowser plus Xvfb and xdotool.
func needHeaded(t *testing.T) string {
	t.Helper()
	p := needBrowser(t)
	if err := headed.NeedTools(); err != nil {
		if strict() {
			t.Fatalf("CDPGUARD_E2E=1: %v", err)
		}
		t.Skipf("skipping: %v (set CDPGUARD_E2E=1 to fail instead)", err)
	}
	return p
}

// clickRecord is what human.html records for one click on its button.
type clickRecord struct {
	Trusted bool    `json:"trusted"`
	Active  bool    `json:"active"`
	X       float64 `json:"x"`
	Y       float64 `json:"y"`
}

// TestHeaded proves the headed harness: a guard with a visible browser on
// Xvfb (serve --headed) and a headed Chromium the guard attaches to, a page
// on the allowed host driven by an agent through the guard, and a human who
// clicks its button: with real X input (xdotool) in serve mode, with
// Input.dispatchMouseEvent on the test's own direct connection in attach
// mode. The page must see a trusted click with a user activation, where the
// harness aimed it.
func TestHeaded(t *testing.T) {
	parallelSuite(t) // own Xvfb display, browsers, guards and test hosts
	path := needHeaded(t)
	d := headed.StartXvfb(t)
	h := testhosts.Start(t)
	page := h.PageURL("/human.html")

	t.Run("serve", func(t *testing.T) {
		g := headed.LaunchGuard(t, d, guardConfig(t))
		ctx, cancel := context.WithTimeout(context.Background(), stepsBound)
		defer cancel()
		agent := dialAgent(ctx, t, g.URL(), "alice")
		target, session, err := headed.OpenPage(ctx, agent, page)
		if err != nil {
			t.Fatalf("agent opens %s: %v", page, err)
		}
		at := locate(ctx, t, agent, session, "press")
		screen, err := headed.ScreenPoint(ctx, agent, session, target, at)
		if err != nil {
			t.Fatalf("screen point: %v", err)
		}
		t.Logf("button centre: viewport %v, screen %v", at, screen)
		if err := d.Human().Click(ctx, screen); err != nil {
			t.Fatalf("human click: %v", err)
		}
		checkClick(ctx, t, agent, session, at)
		artifacts(ctx, t, d, agent, session)
	})

	t.Run("attach", func(t *testing.T) {
		c := headed.StartChromium(t, d, path, "--host-resolver-rules=MAP *.test 127.0.0.1")
		actx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		g, err := cdpguard.Attach(actx, c.URL, guardConfig(t))
		if err != nil {
			t.Fatalf("cdpguard.Attach: %v", err)
		}
		cdptest.CloseOnCleanup(t, g)
		cdptest.WaitHTTP(t, g.URL()+"/readyz", "ok", 20*time.Second)

		ctx, cancel := context.WithTimeout(context.Background(), stepsBound)
		defer cancel()
		agent := dialAgent(ctx, t, g.URL(), "alice")
		target, _, err := headed.OpenPage(ctx, agent, page)
		if err != nil {
			t.Fatalf("agent opens %s: %v", page, err)
		}
		// The human's side: the test's own connection to the browser.
		own, err := headed.AttachPage(ctx, c.Direct, target)
		if err != nil {
			t.Fatalf("direct attach to the agent's tab: %v", err)
		}
		at := locate(ctx, t, c.Direct, own, "press")
		if err := headed.DispatchClick(ctx, c.Direct, own, at); err != nil {
			t.Fatalf("human click over the direct connection: %v", err)
		}
		checkClick(ctx, t, c.Direct, own, at)
		artifacts(ctx, t, d, c.Direct, own)
	})
}

// stepsBound bounds each headed subtest's steps after its browser is up:
// a guard against a hang, not a speed target. 20 s ran out in a loaded CI
// run before the click was read (the page saw none by then).
const stepsBound = 60 * time.Second

// dialAgent connects to a guard's browser endpoint as user.
func dialAgent(ctx context.Context, t *testing.T, base, user string) *cdptest.Client {
	t.Helper()
	hdr := http.Header{userHeader: {user}}
	ws, err := cdptest.BrowserURL(ctx, base, hdr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cdptest.Dial(ctx, ws, cdptest.Options{Header: hdr})
	if err != nil {
		t.Fatalf("dial %s as %s: %v", ws, user, err)
	}
	t.Cleanup(c.Close)
	return c
}

// locate returns the viewport centre of the element with id in session's
// page, found by c's own DOM view.
func locate(ctx context.Context, t *testing.T, c *cdptest.Client, session, id string) headed.Point {
	t.Helper()
	n, err := headed.FindNode(ctx, c, session, headed.ByID(id))
	if err != nil {
		t.Fatalf("find #%s: %v", id, err)
	}
	p, err := headed.Center(ctx, c, session, n.BackendNodeID)
	if err != nil {
		t.Fatalf("centre of #%s: %v", id, err)
	}
	return p
}

// checkClick waits for human.html to record one click and checks it was
// trusted, activated the page and landed within 2 px of at.
func checkClick(ctx context.Context, t *testing.T, c *cdptest.Client, session string, at headed.Point) {
	t.Helper()
	var clicks []clickRecord
	for len(clicks) == 0 {
		if err := headed.Eval(ctx, c, session, "window.__clicks", &clicks); err != nil {
			t.Fatalf("read clicks: %v", err)
		}
		if len(clicks) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the page saw no click on its button (%v)", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	k := clicks[0]
	if len(clicks) != 1 || !k.Trusted || !k.Active {
		t.Errorf("clicks = %+v, want one trusted click with a user activation", clicks)
	}
	if math.Abs(k.X-at.X) > 2 || math.Abs(k.Y-at.Y) > 2 {
		t.Errorf("click landed at %v,%v, aimed at %v", k.X, k.Y, at)
	}
}

// artifacts saves the page and the whole screen as PNGs.
func artifacts(ctx context.Context, t *testing.T, d *headed.Display, c *cdptest.Client, session string) {
	t.Helper()
	if png, err := headed.PageScreenshot(ctx, c, session); err != nil {
		t.Errorf("page screenshot: %v", err)
	} else {
		headed.SaveArtifact(t, "page.png", png)
	}
	if png, err := d.Screenshot(); err != nil {
		t.Errorf("screen screenshot: %v", err)
	} else {
		headed.SaveArtifact(t, "screen.png", png)
	}
}
