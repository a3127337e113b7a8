package readpage

import "testing"

// TestReaderTabEndsWithPage: a user's reader tab is a record on its page;
// the page's end in the page registry alone forgets it, so
// the user's next read opens a tab again, and the other user's tab stays.
func TestReaderTabEndsWithPage(t *testing.T) {
	f := newFixture(t, Deps{})
	ctx := t.Context()
	for _, u := range []string{"alice", "bob"} {
		if _, err := f.r.Read(ctx, u, "https://a.test/", 0, 0); err != nil {
			t.Fatalf("%s's read: %v", u, err)
		}
	}
	if f.b.created != 2 {
		t.Fatalf("%d tabs opened, want 2", f.b.created)
	}
	alice := f.r.tabs["alice"].targetID
	f.pg.Destroyed(alice)
	f.r.mu.Lock()
	_, kept := f.r.tabs["alice"]
	_, bobKept := f.r.tabs["bob"]
	f.r.mu.Unlock()
	if kept || !bobKept {
		t.Fatalf("after alice's tab's end: alice's kept %v, bob's kept %v; want false, true", kept, bobKept)
	}
	if _, err := f.r.Read(ctx, "alice", "https://a.test/", 0, 0); err != nil || f.b.created != 3 {
		t.Errorf("a tab ended is opened again: %v, %d tabs", err, f.b.created)
	}
	if _, err := f.r.Read(ctx, "bob", "https://a.test/", 0, 0); err != nil || f.b.created != 3 {
		t.Errorf("bob's tab was not reused: %v, %d tabs", err, f.b.created)
	}
}
