package events

import (
	"slices"
	"testing"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
)

func TestPublishOrder(t *testing.T) {
	var b Bus
	var got []string
	add := func(who string, methods ...string) {
		t.Helper()
		if err := b.On(who, func(e *cdpmsg.Envelope) { got = append(got, who+":"+e.Method) }, methods...); err != nil {
			t.Fatal(err)
		}
	}
	add("a", "Page.frameDetached", "Page.frameNavigated")
	add("b", "Page.frameDetached")
	b.Seal()
	b.Publish(&cdpmsg.Envelope{Method: "Page.frameDetached"})
	b.Publish(&cdpmsg.Envelope{Method: "Page.frameNavigated"})
	b.Publish(&cdpmsg.Envelope{Method: "Network.requestWillBeSent"}) // nobody observes it
	want := []string{"a:Page.frameDetached", "b:Page.frameDetached", "a:Page.frameNavigated"}
	if !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
	if r := b.Routes(); !slices.Equal(r, []string{"Page.frameDetached → a, b", "Page.frameNavigated → a"}) {
		t.Fatalf("routes %q", r)
	}
}

func TestOnRefuses(t *testing.T) {
	var b Bus
	nop := func(*cdpmsg.Envelope) {}
	for _, tc := range []struct {
		name    string
		fn      Observer
		methods []string
	}{
		{"no methods", nop, nil},
		{"no function", nil, []string{"Page.frameDetached"}},
		{"no domain", nop, []string{".frameDetached"}},
		{"no event", nop, []string{"Page."}},
		{"no dot", nop, []string{"frameDetached"}},
		{"two dots", nop, []string{"Page.frame.Detached"}},
	} {
		if err := b.On("x", tc.fn, tc.methods...); err == nil {
			t.Errorf("%s: On accepted %q", tc.name, tc.methods)
		}
	}
	b.Seal()
	if err := b.On("x", nop, "Page.frameDetached"); err == nil {
		t.Error("On accepted a declaration after Seal")
	}
}

func TestZeroBusDrops(t *testing.T) {
	var b Bus
	b.Publish(&cdpmsg.Envelope{Method: "Page.frameDetached"}) // must not panic
}
