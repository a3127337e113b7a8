package worlds

import (
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
)

// madeIn is MadeIn with the plain ids the tests build.
func (w *Worlds) madeIn(targetID, frameID string, id int64) {
	w.MadeIn(target.ID(targetID), cdp.FrameID(frameID), runtime.ExecutionContextID(id))
}
