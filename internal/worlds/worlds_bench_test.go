package worlds

import (
	"context"
	"strconv"
	"testing"

	"github.com/cdpguard/cdpguard/internal/pages"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// BenchmarkCommand: an agent command naming an object (as Playwright's
// most commands do) checked against the guard's worlds of 100 pages, two
// worlds each (the reader's and the controls'), none of them its own.
func BenchmarkCommand(b *testing.B) {
	w := New(Deps{})
	for i := range 100 {
		t := "T" + strconv.Itoa(i)
		w.madeIn(t, t, int64(1000+2*i))
		w.madeIn(t, t, int64(1001+2*i))
	}
	cmd := relay.Command{SessionID: "S1", Method: "Runtime.callFunctionOn", Params: []byte(`{"objectId":"-123.7.4","functionDeclaration":"function(){}"}`)}
	ctx := context.Background()
	for b.Loop() {
		if v := w.Command(ctx, nil, cmd); v.Refuse != "" {
			b.Fatal(v.Refuse)
		}
	}
}

// BenchmarkFrameDetachedOnPage: BenchmarkFrameDetached as the guard sees
// it, on the page session of one of the 100 pages the registry knows: only
// that page's worlds are looked at.
func BenchmarkFrameDetachedOnPage(b *testing.B) {
	reg := pages.New()
	w := New(Deps{Pages: reg})
	for i := range 100 {
		t := "T" + strconv.Itoa(i)
		reg.Track(t, "C")
		reg.Attached(t, "S"+strconv.Itoa(i))
		w.madeIn(t, t, int64(1000+2*i))
		w.madeIn(t, t, int64(1001+2*i))
	}
	e := ev("S1", "Page.frameDetached", `{"frameId":"F1","reason":"remove"}`)
	for b.Loop() {
		w.OnFrameDetached(e)
	}
}
