package cdpguard

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSetupWritesBeforeRelease (#22, the missing Allow button): every
// setup command of a page the guard auto-attached is written before the
// page is released (Runtime.runIfWaitingForDebugger). Chrome evaluates the
// controls script on a new document and reports Page.frameNavigated only
// once Page.enable is in effect (InspectorPageAgent::enable registers the
// agent for those probes); a Page.enable written after the release can
// reach the renderer after the first document committed, which then has
// no controls and no explanation-page commit: no button. Before the fix
// Page.enable was written from a goroutine of its own, racing the release.
func TestSetupWritesBeforeRelease(t *testing.T) {
	g, err := newGuard(Config{Allow: []string{"allowed.test"}, Listen: "127.0.0.1:0", Controls: true})
	if err != nil {
		t.Fatal(err)
	}
	fb := newFakeBrowser("")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.start(ctx, fb); err != nil {
		_ = g.Close()
		t.Fatal(err)
	}
	const tabs = 20
	for i := range tabs {
		fb.in <- fmt.Appendf(nil, `{"method":"Target.attachedToTarget","params":{"sessionId":"S%d",`+
			`"targetInfo":{"targetId":"T%d","type":"page","url":"about:blank","browserContextId":"C"},"waitingForDebugger":true}}`, i, i)
	}
	for i := range tabs {
		if err := g.pages.AwaitSetup(ctx, fmt.Sprintf("T%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	w := fb.writes()
	// Each release follows the Page.enable of its own page: count both in
	// order, per page, through the session each command names.
	enabled, late := 0, 0
	for _, s := range fb.sessions() {
		switch s.method {
		case "Page.enable":
			enabled++
		case "Runtime.runIfWaitingForDebugger":
			if !slices.ContainsFunc(fb.sessions(), func(o sessionWrite) bool {
				return o.method == "Page.enable" && o.session == s.session && o.seq < s.seq
			}) {
				late++
			}
		}
	}
	if enabled != tabs || late != 0 {
		t.Fatalf("%d of %d pages released before their Page.enable was written (%d Page.enable); written: %s", late, tabs, enabled, strings.Join(w, ", "))
	}
}

// TestTargetEventsWired: the targets' record reaches the guard's
// components only when an event comes, some built after it (the users
// registry): a crashed renderer, a created and a changed target and a
// destroyed one go through the record on the read loop without fault,
// and the crashed tab is closed.
func TestTargetEventsWired(t *testing.T) {
	g, err := newGuard(Config{Allow: []string{"allowed.test"}, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	fb := newFakeBrowser("")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.start(ctx, fb); err != nil {
		_ = g.Close()
		t.Fatal(err)
	}
	for _, m := range []string{
		`{"method":"Target.targetCreated","params":{"targetInfo":{"targetId":"T1","type":"page","url":"about:blank","browserContextId":"C"}}}`,
		`{"method":"Target.targetInfoChanged","params":{"targetInfo":{"targetId":"T1","type":"page","url":"chrome://settings","browserContextId":"C"}}}`,
		`{"method":"Target.targetCrashed","params":{"targetId":"T1","status":"crashed","errorCode":1}}`,
		`{"method":"Target.targetDestroyed","params":{"targetId":"T1"}}`,
	} {
		fb.in <- []byte(m)
	}
	for end := time.Now().Add(5 * time.Second); !slices.ContainsFunc(fb.writes(), func(w string) bool { return strings.Contains(w, "Target.closeTarget") }); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the crashed tab was not closed; written: %s", strings.Join(fb.writes(), ", "))
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
