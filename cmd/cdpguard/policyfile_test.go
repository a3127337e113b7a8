package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writePolicy(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPolicyFileRefusesPolicyFlags checks that --allow, --block and
// --instructions, as flags or environment, are refused with --policy-file
// before anything starts, with an error saying to put them in the file.
func TestPolicyFileRefusesPolicyFlags(t *testing.T) {
	path := writePolicy(t, "allow: [example.com]\n")
	for _, c := range []struct {
		args []string
		env  [2]string
		want string
	}{
		{args: []string{"--allow", "example.org"}, want: "--allow (or ALLOWED_ORIGINS)"},
		{args: []string{"--instructions", "hi"}, want: "put it in the file as instructions:"},
		{env: [2]string{"BLOCKED_ORIGINS", "ads.example"}, want: "--block (or BLOCKED_ORIGINS)"},
	} {

		for _, cmd := range []string{"serve", "attach"} {
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			args := append([]string{"cdpguard", cmd, "--policy-file", path, "--browser-url", "http://127.0.0.1:1"}, c.args...)
			if cmd == "serve" {
				args = append([]string{"cdpguard", cmd, "--policy-file", path}, c.args...)
			}
			app := newApp()
			app.ErrWriter = &bytes.Buffer{}
			err := app.Run(args)
			if !errors.Is(err, errPolicyFlags) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %v env %v: err = %v, want errPolicyFlags naming %q", cmd, c.args, c.env, err, c.want)
			}
			if c.env[0] != "" {
				_ = os.Unsetenv(c.env[0])
			}
		}
	}
}

// TestPolicyFileEmptyEnv: the image sets ALLOWED_ORIGINS="" and friends;
// empty values set nothing, so they do not compete with the file.
func TestPolicyFileEmptyEnv(t *testing.T) {
	path := writePolicy(t, "allow: [example.com]\n")
	t.Setenv("ALLOWED_ORIGINS", "")
	t.Setenv("BLOCKED_ORIGINS", "")
	t.Setenv("EXTRA_INSTRUCTIONS", "")
	app := newApp()
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"cdpguard", "check", "--policy-file", path, "https://example.com/"}); err != nil || !strings.HasPrefix(out.String(), "allow") {
		t.Errorf("%q, %v", out.String(), err)
	}
}

func TestCheckPolicyFile(t *testing.T) {
	path := writePolicy(t, "allow: [example.com]\ngroupHeader: X-Group\ngroups:\n  staff: {allow: [wiki.example]}\n")
	run := func(args ...string) (string, error) {
		app := newApp()
		var out bytes.Buffer
		app.Writer = &out
		err := app.Run(append([]string{"cdpguard", "check", "--policy-file", path}, args...))
		return out.String(), err
	}
	out, err := run("https://example.com/", "https://wiki.example/")
	if err != nil || !strings.Contains(out, "allow\thttps://example.com/") || !strings.Contains(out, "block\thttps://wiki.example/") {
		t.Errorf("default group: %q, %v", out, err)
	}
	out, err = run("--group", "staff", "https://example.com/", "https://wiki.example/")
	if err != nil || !strings.Contains(out, "block\thttps://example.com/") || !strings.Contains(out, "allow\thttps://wiki.example/") {
		t.Errorf("staff: %q, %v", out, err)
	}
	if _, err := run("--group", "nobody", "https://example.com/"); err == nil || !strings.Contains(err.Error(), "staff") {
		t.Errorf("unknown group: %v", err)
	}
	// `cdpguard read` judges by the file too, before any browser starts.
	app := newApp()
	app.ErrWriter = &bytes.Buffer{}
	if err := app.Run([]string{"cdpguard", "read", "--policy-file", path, "https://wiki.example/"}); err == nil || !strings.Contains(err.Error(), "example.com") {
		t.Errorf("read of a URL the file's default group refuses: %v", err)
	}
	bad := writePolicy(t, "allow:\n  - example.com\n  - \"bad entry\"\n")
	app = newApp()
	err = app.Run([]string{"cdpguard", "check", "--policy-file", bad, "https://example.com/"})
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "bad entry") {
		t.Errorf("bad file: %v", err)
	}
}
