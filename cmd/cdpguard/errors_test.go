package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// TestServeBadEntryNamesFlag: serve stops before any browser starts, with
// the flag and the entry the operator wrote.
func TestServeBadEntryNamesFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow", "ok.test;bad.test/path"}, `invalid --allow entry "bad.test/path"`},
		{[]string{"--host-map", "*.test=nowhere"}, `invalid --host-map entry "*.test=nowhere"`},
		{[]string{"--allow-private", "10.0.0.0/33"}, `invalid --allow-private entry "10.0.0.0/33"`},
		{[]string{"--chrome", "/nonexistent/chromium"}, "chrome binary not found"},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
		err := app.Run(append([]string{"cdpguard", "serve", "--listen", "127.0.0.1:0"}, c.args...))
		if err == nil || !errors.Is(err, cdpguard.ErrSetup) || !strings.Contains(describe(err), c.want) {
			t.Errorf("serve %v: %v (described %q), want a setup error containing %q", c.args, err, describe(err), c.want)
		}
	}
}
