package cdpguard

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cdpguard/cdpguard/js"
)

// defaultReadSettleTimeout bounds the wait for a loaded page to settle.
const defaultReadSettleTimeout = 3 * time.Second

// settleQuiet is how long the network and the DOM must stay unchanged for a
// page to count as settled; settlePoll is how often the reader looks.
const (
	settleQuiet = 500 * time.Millisecond
	settlePoll  = 100 * time.Millisecond
)

// sparseChars is the visible text under which a read carries a note
// suggesting to wait for a text: the page may still be rendering.
const sparseChars = 200

// sparseNote is that note; %d is the number of characters read.
const sparseNote = "the page shows little text (%d characters); if it renders its content by script, it may not be there yet: wait for a text of the content to appear (browser_wait_for) and read again."

// settleState is what js/settle.js returns.
type settleState struct {
	State     string  `json:"state"`
	Now       float64 `json:"now"`     // ms since the document's navigation started
	LastNet   float64 `json:"lastNet"` // ms: when the last finished request ended
	Loaded    float64 `json:"loaded"`  // ms: when the load event ended (0: not yet)
	Resources int     `json:"resources"`
	Nodes     int     `json:"nodes"`
	Text      int     `json:"text"`
}

func (g *Guard) readSettleTimeout() time.Duration {
	if g.cfg.ReadSettleTimeout != 0 {
		return max(0, g.cfg.ReadSettleTimeout)
	}
	return defaultReadSettleTimeout
}

// settle waits, at most the settle bound, until the page has loaded, no
// request has finished for settleQuiet and its DOM (element count, text
// length) has not changed for settleQuiet. A page the reader did not just
// navigate (fresh false: an agent's page, read without a url) counts as
// settled at the first look when its load ended settleQuiet ago or more
// and its network is quiet: reading a page that settled long ago costs no
// wait. It returns
// whether the page settled; errors of a document going away mid-wait are
// not errors (the next look reads the new document).
func (g *Guard) settle(ctx context.Context, session string, fresh bool) (bool, error) {
	bound := g.readSettleTimeout()
	if bound == 0 {
		return true, nil
	}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	quiet := float64(settleQuiet.Milliseconds())
	var prev settleState
	var stable time.Time
	first := true
	for {
		var s settleState
		frame, err := mainFrame(ctx, g.mux, session)
		if err != nil {
			return false, err
		}
		if err := g.inWorld(ctx, session, frame.ID, "Runtime.evaluate", map[string]any{"expression": js.Settle}, &s); err == nil {
			now := time.Now()
			netQuiet := s.Now-s.LastNet >= quiet
			if s.State == "complete" && netQuiet && first && !fresh && s.Loaded > 0 && s.Now-s.Loaded >= quiet {
				return true, nil
			}
			if first || s.Nodes != prev.Nodes || s.Text != prev.Text || s.Resources != prev.Resources || s.State != prev.State {
				stable = now
			}
			if s.State == "complete" && netQuiet && now.Sub(stable) >= settleQuiet {
				return true, nil
			}
			prev, first = s, false
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("settle: %w", ctx.Err())
		case <-deadline.C:
			return false, nil
		case <-tick.C:
		}
	}
}

// webPage reports whether url is an http(s) page, the only kind the
// note suggesting to wait for a text is for (not about: or error pages).
func webPage(url string) bool {
	return strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://")
}
