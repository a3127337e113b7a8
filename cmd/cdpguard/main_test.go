package main

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cdpguard/cdpguard/internal/policy"
)

func TestSplitChromeFlags(t *testing.T) {
	got := splitChromeFlags([]string{
		"--host-resolver-rules=MAP *.test 127.0.0.1, MAP * ~NOTFOUND",
		"--disable-features=A,B --lang=en",
	})
	want := []string{
		"--host-resolver-rules=MAP *.test 127.0.0.1, MAP * ~NOTFOUND",
		"--disable-features=A,B",
		"--lang=en",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("splitChromeFlags = %q, want %q", got, want)
	}
}

// TestRepeatableFlagsKeepCommas: urfave/cli splits slice flags on commas by
// default, which would break Chrome flags such as --disable-features=A,B.
func TestRepeatableFlagsKeepCommas(t *testing.T) {
	app := newApp()
	var got []string
	for _, c := range app.Commands {
		if c.Name == "serve" {
			c.Action = func(ctx *cli.Context) error {
				got = ctx.StringSlice("chrome-flag")
				return nil
			}
		}
	}
	err := app.Run([]string{"cdpguard", "serve", "--chrome-flag", "--disable-features=A,B", "--chrome-flag", "--host-resolver-rules=MAP a 1.2.3.4, MAP b 1.2.3.4"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--disable-features=A,B", "--host-resolver-rules=MAP a 1.2.3.4, MAP b 1.2.3.4"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("chrome flags = %q, want %q", got, want)
	}
}

func TestCheck(t *testing.T) {
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	err := app.Run([]string{"cdpguard", "check", "--allow", "allowed.test;*.example.com", "http://allowed.test:8080/", "http://allowed.test@evil.test/", "file:///etc/passwd"})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "allow\t") || !strings.HasPrefix(lines[1], "block\t") || !strings.HasPrefix(lines[2], "block\t") {
		t.Fatalf("check output:\n%s", out.String())
	}
	if !strings.Contains(lines[1], `"evil.test"`) {
		t.Errorf("reason does not name the host: %s", lines[1])
	}
}

func TestCheckBadEntry(t *testing.T) {
	app := newApp()
	app.Writer = &bytes.Buffer{}
	err := app.Run([]string{"cdpguard", "check", "--allow", "ok.test;bad.*.test", "http://ok.test/"})
	if !errors.Is(err, policy.ErrInvalidEntry) || !strings.Contains(err.Error(), "bad.*.test") {
		t.Fatalf("err = %v, want an error naming the entry", err)
	}
}

// TestDialogGraceFlag: unset leaves the package default (Config zero), an
// explicit 0 means "answer at once", anything else is passed on.
func TestDialogGraceFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
	}{
		{nil, 0},
		{[]string{"--dialog-grace", "0"}, -1},
		{[]string{"--dialog-grace", "10s"}, 10 * time.Second},
	} {
		app := newApp()
		var got time.Duration
		for _, cmd := range app.Commands {
			if cmd.Name == "serve" {
				cmd.Action = func(ctx *cli.Context) error {
					got = dialogGraceFlag(ctx)
					return nil
				}
			}
		}
		if err := app.Run(append([]string{"cdpguard", "serve"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%q: grace %v, want %v", c.args, got, c.want)
		}
	}
}
