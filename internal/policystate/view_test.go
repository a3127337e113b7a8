package policystate

import (
	"path/filepath"
	"testing"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// TestView: a user's view is their group's policy with its instructions,
// the group's name, the search URL and their grants; without a session
// the grants are left out.
func TestView(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.yaml")
	write(t, path, "allow: [one.test]\ninstructions: ask first\ngroupHeader: X-Group\ngroups:\n  staff:\n    allow: [wiki.test]\n")
	st, _, _ := fromFile(t, path)
	read := func(v any) map[string]any {
		t.Helper()
		b, err := jsonv2.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := jsonv2.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := read(st.View("", "https://search.test/?q=", nil))
	if m["instructions"] != "ask first" || m["searchUrl"] != "https://search.test/?q=" || m["grants"] != nil || m["group"] != nil {
		t.Fatalf("default view: %v", m)
	}
	m = read(st.View(GroupKey("bob", "staff"), "", []string{"extra.test"}))
	if m["group"] != "staff" || m["searchUrl"] != nil || len(m["grants"].([]any)) != 1 {
		t.Fatalf("staff view: %v", m)
	}
}
