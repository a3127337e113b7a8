package mcpserver

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestUploadToolsOnlyWithUploadDir: browser_file_upload and browser_drop
// are listed only when the operator set an upload directory.
func TestUploadToolsOnlyWithUploadDir(t *testing.T) {
	for _, on := range []bool{false, true} {
		cs := newTestServerWith(t, &fakeBrowser{}, Options{UploadEnabled: on})
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		for _, n := range []string{"browser_file_upload", "browser_drop"} {
			if slices.Contains(names, n) != on {
				t.Errorf("UploadEnabled=%v: %s listed = %v", on, n, !on)
			}
		}
		for _, n := range []string{"browser_find", "browser_network_request", "browser_emulate_media", "browser_read"} {
			if !slices.Contains(names, n) {
				t.Errorf("UploadEnabled=%v: %s missing from %v", on, n, names)
			}
		}
		if slices.Contains(names, "browser_run_code_unsafe") {
			t.Error("browser_run_code_unsafe is listed")
		}
	}
}

// TestJSRegex: /body/flags takes JavaScript's i, m and s; anything else is
// the pattern itself.
func TestJSRegex(t *testing.T) {
	for _, c := range []struct {
		src, line string
		want      bool
	}{
		{"/cherry TART \\d+/i", "listitem: Cherry tart 303", true},
		{"cherry TART", "listitem: Cherry tart 303", false},
		{"Cherry tart", "listitem: Cherry tart 303", true},
		{"/api/.*user", "GET /api/v1/user", true}, // not flags: ".*user"
		{"/a.b/s", "a\nb", true},
	} {
		re, err := jsRegex(c.src)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		if got := re.MatchString(c.line); got != c.want {
			t.Errorf("%q on %q = %v, want %v", c.src, c.line, got, c.want)
		}
	}
	if _, err := jsRegex("(?<=x)y"); err == nil || !strings.Contains(err.Error(), "RE2") {
		t.Errorf("lookbehind: %v", err)
	}
}

// TestAncestors: a match's path is the nearest less-indented line above,
// level by level.
func TestAncestors(t *testing.T) {
	lines := strings.Split(`- main
  - region "Fruits"
    - heading "Fruits"
    - list
      - listitem: Apple
  - button "Shift me"`, "\n")
	got := ancestors(lines, 4)
	if !slices.Equal(got, []int{0, 1, 3}) {
		t.Errorf("ancestors of the listitem = %v, want [0 1 3]", got)
	}
	if got := ancestors(lines, 5); !slices.Equal(got, []int{0}) {
		t.Errorf("ancestors of the button = %v, want [0]", got)
	}
}

// TestConsoleLevel: each CDP console type has the level @playwright/mcp
// filters by.
func TestConsoleLevel(t *testing.T) {
	for typ, want := range map[string]string{"error": "error", "assert": "error", "warning": "warning", "log": "info", "info": "info", "table": "info", "debug": "debug"} {
		if got := consoleLevel(typ); got != want {
			t.Errorf("consoleLevel(%q) = %q, want %q", typ, got, want)
		}
	}
}
