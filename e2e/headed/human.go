package headed

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"

	"github.com/cdpguard/cdpguard/e2e/cdptest"
)

// Human clicks on d with real X input (xdotool, through the XTEST
// extension): input from outside CDP altogether, as a person's mouse.
type Human struct{ d *Display }

// Human returns the person at d's screen.
func (d *Display) Human() *Human { return &Human{d: d} }

// Click moves the X pointer to screen point p and clicks the left button.
func (h *Human) Click(ctx context.Context, p Point) error {
	return h.xdotool(ctx, "mousemove", "--sync", itoa(p.X), itoa(p.Y), "click", "1")
}

func (h *Human) xdotool(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "xdotool", args...)
	cmd.Env = h.d.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("xdotool %v: %w: %s", args, err, out)
	}
	return nil
}

// DispatchClick clicks viewport point p of session's page with
// Input.dispatchMouseEvent (move, press, release) on c. With the test's
// direct browser connection as c, that is the human of the attach
// test: trusted input from a connection that is no agent's.
func DispatchClick(ctx context.Context, c *cdptest.Client, session string, p Point) error {
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		ev := map[string]any{"type": typ, "x": p.X, "y": p.Y}
		if typ != "mouseMoved" {
			ev["button"], ev["clickCount"] = "left", 1
		}
		if _, err := c.Call(ctx, session, "Input.dispatchMouseEvent", ev); err != nil {
			return err
		}
	}
	return nil
}

func itoa(f float64) string { return strconv.Itoa(int(f + 0.5)) }
