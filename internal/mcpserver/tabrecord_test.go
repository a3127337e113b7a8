package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
)

// TestTabRecordEnds: the tools keep one record per tab (user.tabs): a
// tab whose session the browser detached is forgotten by the next call,
// and one closed for a dialog loop keeps its record, never picked, across
// a reconnect, until Chrome stops listing it; then its record ends too.
func TestTabRecordEnds(t *testing.T) {
	fb := &fakeBrowser{noHang: true}
	u := newUser(&Server{}, "k")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var p *Pipe
	open := func() {
		p = NewPipe(u.onEvent)
		if _, err := fb.Open(ctx, "k", p); err != nil {
			t.Fatal(err)
		}
		u.pipe = p
	}
	open()
	defer func() { u.reset(); fb.wg.Wait() }()
	add := func(id target.ID, s target.SessionID) *tab {
		tb := &tab{id: id, s: Session{p: p, ID: s}}
		u.tabs[id] = tb
		u.evTabs = append(u.evTabs, tb)
		return tb
	}
	t1, t2 := add("T1", "S1"), add("T2", "S2")
	u.cur = t2

	u.detached("S2")
	u.detached("S9") // no tab's session
	if !t2.detached || t1.detached {
		t.Fatalf("detached marks: T1 %v, T2 %v; want only T2", t1.detached, t2.detached)
	}
	u.forget(t2.id)
	if u.tabs["T2"] != nil || u.cur != nil || len(u.evTabs) != 1 {
		t.Fatalf("a detached tab's record is kept: tabs %v, cur %v, evTabs %d", u.tabs, u.cur, len(u.evTabs))
	}

	// T1 loops on dialogs (still listed by Chrome), T3 did and is gone.
	t3 := add("T3", "S3")
	t1.loopClosed, t1.detached = true, true
	t3.loopClosed, t3.detached = true, true
	u.forget("T1")
	u.forget("T3")
	u.reset() // a reconnect
	open()
	if u.tabs["T1"] != t1 || u.tabs["T3"] != t3 || len(u.evTabs) != 0 {
		t.Fatalf("a tab closed for a dialog loop lost its record: tabs %v, evTabs %d", u.tabs, len(u.evTabs))
	}
	if got, err := u.attach(ctx, "T1"); err != nil || got == t1 {
		t.Fatalf("attach picked the loop-closed record (%v, %v)", got == t1, err)
	}
	u.tabs["T1"] = t1 // as before the attach above
	ps, err := u.pages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 0 {
		t.Errorf("pages lists a tab closed for a dialog loop: %v", ps)
	}
	if u.tabs["T1"] != t1 || u.tabs["T3"] != nil {
		t.Errorf("records after Chrome's listing (T1 listed, T3 not): T1 kept %v, T3 kept %v; want true, false", u.tabs["T1"] == t1, u.tabs["T3"] != nil)
	}
}

// TestLoopClosedCurrentTabEnds: a tab closed for a dialog loop that is
// still the current one (answering a dialog selects its tab) and whose
// record ends because Chrome no longer lists it is no longer current: the
// next call must not use its ended session (MCPModelTasks/fillForm after
// dialogLoop failed so, every call refused as "not one of this
// connection's sessions").
func TestLoopClosedCurrentTabEnds(t *testing.T) {
	fb := &fakeBrowser{noHang: true}
	u := newUser(&Server{}, "k")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := NewPipe(u.onEvent)
	if _, err := fb.Open(ctx, "k", p); err != nil {
		t.Fatal(err)
	}
	u.pipe = p
	defer func() { u.reset(); fb.wg.Wait() }()
	gone := &tab{id: "T9", s: Session{p: p, ID: "S9"}, loopClosed: true, detached: true} // Chrome lists only T1
	u.tabs[gone.id] = gone
	u.evTabs = append(u.evTabs, gone)
	u.cur = gone
	if _, err := u.pages(ctx); err != nil { // e.g. a result listing the tabs
		t.Fatal(err)
	}
	if u.cur == gone || u.tabs["T9"] != nil || len(u.evTabs) != 0 {
		t.Fatalf("the ended loop tab is still current %v, recorded %v, in evTabs %d", u.cur == gone, u.tabs["T9"] != nil, len(u.evTabs))
	}
	got, err := u.page(ctx, true)
	if err != nil || got == gone || got.s.ID == "S9" {
		t.Fatalf("the next call's tab: %+v, %v; want another tab", got, err)
	}
}
