package policyfile

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/internal/policy"
)

func TestParseGood(t *testing.T) {
	s, _, err := Read(filepath.Join("testdata", "good.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Default().Policy.Origins(); !slices.Equal(got, []string{"example.com", "*.wikipedia.org"}) {
		t.Errorf("default allow = %v", got)
	}
	if s.Default().Instructions != "Ask the operator to add a site." {
		t.Errorf("instructions = %q", s.Default().Instructions)
	}
	if s.Header() != "X-Cdpguard-Group" || s.RefusesUnknown() || !slices.Equal(s.GroupNames(), []string{"public", "staff"}) {
		t.Errorf("header %q refuse %v groups %v", s.Header(), s.RefusesUnknown(), s.GroupNames())
	}
	staff := s.Group("staff")
	if !staff.Policy.Decide("https://wiki.internal.example/").Allowed || s.Default().Policy.Decide("https://wiki.internal.example/").Allowed {
		t.Error("staff must reach the wiki and the default group must not")
	}
	// Keys a group leaves out come from the top level: staff keeps the blocklist.
	if !slices.Equal(staff.Policy.Blocked(), []string{"ads.example.com"}) || staff.Instructions != "Staff may read the wiki." {
		t.Errorf("staff block %v instructions %q", staff.Policy.Blocked(), staff.Instructions)
	}
	// A group that names an empty allow list replaces the top level's.
	if pub := s.Group("public"); !pub.Policy.Empty() || pub.Instructions != s.Default().Instructions {
		t.Errorf("public: empty %v instructions %q", pub.Policy.Empty(), pub.Instructions)
	}
}

// TestParseBroken checks that every broken file in testdata is refused
// with the line and the entry at fault.
func TestParseBroken(t *testing.T) {
	cases := map[string]struct {
		line  int
		entry string
		in    string // a fragment of the reason
	}{
		"bad-unknown-key.yaml":        {2, "alow", "unknown key"},
		"bad-entry.yaml":              {3, "exa mple.com/path", "invalid allow entry"},
		"bad-block-entry.yaml":        {3, "file:///etc", "invalid block entry"},
		"bad-group-key.yaml":          {6, "staff.alow", "unknown key in a group"},
		"bad-group-entry.yaml":        {5, "http://0x7f.1/", "invalid allow entry"},
		"bad-groups-no-header.yaml":   {3, "groups", "need groupHeader"},
		"bad-yaml.yaml":               {0, "", "not valid YAML"},
		"bad-repeated.yaml":           {2, "allow", "repeated key (first on line 1)"},
		"bad-not-string.yaml":         {2, "allow", "must be a string"},
		"bad-unknown-group-mode.yaml": {2, "maybe", `"default" or "refuse"`},
		"bad-group-name.yaml":         {4, "bad name", "group name"},
		"bad-empty.yaml":              {0, "", "empty"},
		"bad-alias.yaml":              {2, "block", "aliases"},
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "bad-*.yaml"))
	if len(files) != len(cases) {
		t.Errorf("%d bad files, %d cases: every broken file needs a case", len(files), len(cases))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			want, ok := cases[name]
			if !ok {
				t.Fatal("no case for this file")
			}
			_, _, err := Read(f)
			t.Log(err)
			var fe *Error
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want an *Error wrapping ErrInvalid", err)
			}
			if want.line != 0 && fe.Line != want.line {
				t.Errorf("line = %d, want %d (%v)", fe.Line, want.line, err)
			}
			if fe.Entry != want.entry || !strings.Contains(fe.Reason, want.in) {
				t.Errorf("entry %q reason %q; want entry %q and %q", fe.Entry, fe.Reason, want.entry, want.in)
			}
			if !strings.Contains(err.Error(), f) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// TestEntryErrorsMatchFlags checks the file refuses an entry with the same
// reason --allow gives (internal/policy is the one validator).
func TestEntryErrorsMatchFlags(t *testing.T) {
	_, flagErr := policy.Parse([]string{"exa mple.com/path"}, nil)
	_, err := Parse([]byte("allow:\n  - \"exa mple.com/path\"\n"))
	if flagErr == nil || err == nil || !strings.Contains(err.Error(), flagErr.Error()) {
		t.Fatalf("file error %v does not carry the flag's %v", err, flagErr)
	}
}

func TestParseLimits(t *testing.T) {
	big := "allow: [example.com]\ninstructions: \"" + strings.Repeat("x", MaxBytes) + "\"\n"
	if _, err := Parse([]byte(big)); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversize file: %v", err)
	}
	if _, err := Parse([]byte("allow: [a.example]\n---\nallow: [b.example]\n")); !errors.Is(err, ErrInvalid) {
		t.Errorf("two documents: %v", err)
	}
	if _, err := Parse([]byte("- example.com\n")); !errors.Is(err, ErrInvalid) {
		t.Errorf("a list at the top: %v", err)
	}
	if _, err := Parse([]byte("groupHeader: X-Group\nallow: []\n")); !errors.Is(err, ErrInvalid) {
		t.Errorf("groupHeader without groups: %v", err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Read opens the FIFO (O_NONBLOCK) and refuses what it opened; an open
	// that blocked would hang here, so it runs under a bound.
	for _, p := range []string{fifo, dir} {
		res := make(chan error, 1)
		go func() { _, _, err := Read(p); res <- err }()
		select {
		case err := <-res:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular (a FIFO would block the watcher)", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: Read blocked for 10 s", p)
		}
	}
	if _, _, err := Read(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || errors.Is(err, ErrInvalid) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestScalarList checks a single string holds entries separated as --allow's.
func TestScalarList(t *testing.T) {
	s, err := Parse([]byte("allow: \"example.com; *.example.org\"\nblock:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Default().Policy.Origins(); !slices.Equal(got, []string{"example.com", "*.example.org"}) {
		t.Errorf("allow = %v", got)
	}
}
