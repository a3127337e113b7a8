package readpage

import (
	"context"
	"fmt"
	"time"

	"github.com/cdpguard/cdpguard/js"
)

// settleQuiet is how long the network and the DOM must stay unchanged for a
// page to count as settled; settlePoll is how often the reader looks.
const (
	settleQuiet = 500 * time.Millisecond
	settlePoll  = 100 * time.Millisecond
)

// scriptQuiet is how long the DOM of a short page with scripts must stay
// unchanged, watched by the reader's observer, for its scripts to count as
// done writing it before the settle bound: a static short page is read
// after it instead of at the bound, and a page written 800 ms after its
// load (a timer, no request) is still waited for.
const scriptQuiet = 1500 * time.Millisecond

// scriptChars is the readable text (characters other than white space,
// outside scripts, styles and navigation chrome) under which a page that has
// scripts counts as not written yet ("Loading..."): the reader waits for its
// scripts to write it, until the settle bound after the page's load.
const scriptChars = 200

// settleState is what js/settle.js returns; times are ms since the
// document's navigation started.
type settleState struct {
	State     string  `json:"state"`
	Now       float64 `json:"now"`
	LastNet   float64 `json:"lastNet"` // when the last finished request ended
	Loaded    float64 `json:"loaded"`  // when the load event ended (0: not yet)
	Resources int     `json:"resources"`
	Nodes     int     `json:"nodes"`
	Text      int     `json:"text"`     // the body's text length
	Chars     int     `json:"chars"`    // readable characters, at most scriptChars
	Scripted  bool    `json:"scripted"` // the document has script elements
	// Inert is whether nothing in the document can change it after its
	// load: no script element, inline handler, frame, plugin or refresh.
	// A document with more elements and attributes than one look visits
	// (js/settle.js's inertLimit) is not inert, so the look stays bounded.
	Inert bool `json:"inert"`
	// Watched is whether the reader's MutationObserver was already watching
	// the document (an earlier look installed it); Changes counts the DOM
	// changes it saw, QuietFor is how long ago the last one was.
	Watched  bool    `json:"watched"`
	Changes  int     `json:"changes"`
	QuietFor float64 `json:"quietFor"`
}

// settle waits, at most the settle bound, until the page has loaded, no
// request has finished for settleQuiet, its DOM has not changed for
// settleQuiet (element count, text length, or any change of nodes or text
// the observer saw), and its scripts are not still writing it (writing).
// A page the reader did not just navigate (fresh false: an agent's page,
// read without a url) counts as settled at the first look when its network
// is quiet, its scripts are not writing it, and either its load ended the
// settle bound ago or more, or an earlier read's observer has seen it
// quiet for settleQuiet: reading a page that settled costs no wait. An
// inert page (no script, inline handler, frame, plugin or refresh) that
// has loaded and shows scriptChars of readable text is settled at the first
// look, fresh or not: nothing in it can write it later, and what its
// requests still bring are images and styles, not text. It
// returns whether the page settled; errors of a document going away
// mid-wait are not errors (the next look reads the new document).
func (r *Reader) settle(ctx context.Context, session string, fresh bool) (bool, error) {
	bound := r.d.SettleTimeout
	if bound == 0 {
		return true, nil
	}
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	w := settleWatch{fresh: fresh, bound: bound}
	// The observer outlives the reader's last look by the bound, and goes
	// at the page's first DOM change after that.
	args := []any{map[string]any{"value": bound.Milliseconds()}, map[string]any{"value": scriptChars}}
	for {
		frame, err := r.mainFrame(ctx, session)
		if err != nil {
			return false, err
		}
		var s settleState
		if err := r.inWorld(ctx, session, frame.ID, "Runtime.callFunctionOn", map[string]any{"functionDeclaration": js.Settle, "arguments": args}, &s); err == nil && w.settled(s, time.Now()) {
			return true, nil
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

// settleWatch decides, look by look, whether a page has settled.
type settleWatch struct {
	fresh  bool          // the reader just navigated the page
	bound  time.Duration // the settle bound
	prev   settleState
	stable time.Time // when the DOM was last seen changed
	looked bool
}

// writing reports whether the page's scripts may still be writing its
// text: it shows under scriptChars of readable text, has scripts, its load
// ended under the bound ago (or not yet), and the reader's observer has
// not seen its DOM still for scriptQuiet.
func (w *settleWatch) writing(s settleState) bool {
	still := s.Watched && s.QuietFor >= ms(scriptQuiet)
	return s.Chars < scriptChars && s.Scripted && (s.Loaded == 0 || s.Now-s.Loaded < ms(w.bound)) && !still
}

// settled takes in one look at the page, taken at now, and reports whether
// the page has settled.
func (w *settleWatch) settled(s settleState, now time.Time) bool {
	if s.State == "complete" && s.Inert && s.Chars >= scriptChars {
		return true
	}
	quiet := ms(settleQuiet)
	ready := s.State == "complete" && s.Now-s.LastNet >= quiet && !w.writing(s)
	if !w.looked && !w.fresh && ready && s.Loaded > 0 && (s.Now-s.Loaded >= ms(w.bound) || s.Watched && s.QuietFor >= quiet) {
		return true
	}
	p := w.prev
	if !w.looked || s.Nodes != p.Nodes || s.Text != p.Text || s.Resources != p.Resources || s.State != p.State || s.Changes != p.Changes {
		w.stable = now
	}
	w.prev, w.looked = s, true
	return ready && now.Sub(w.stable) >= settleQuiet
}

// ms is d in milliseconds, as the page's clock counts.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
