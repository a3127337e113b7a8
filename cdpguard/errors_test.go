package cdpguard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// TestSetupErrors: every start-up error that needs no browser wraps
// ErrSetup; configuration mistakes are a *ConfigError naming the field and
// the entry; a missing browser wraps ErrNoBrowser and is no ConfigError.
func TestSetupErrors(t *testing.T) {
	cases := []struct {
		name         string
		cfg          cdpguard.Config
		field, entry string // "" field: not a ConfigError
		noBrowser    bool
	}{
		{name: "allow path", cfg: cdpguard.Config{Allow: []string{"ok.test;bad.test/path"}}, field: "Allow", entry: "bad.test/path"},
		{name: "allow middle wildcard", cfg: cdpguard.Config{Allow: []string{"a.*.test"}}, field: "Allow", entry: "a.*.test"},
		{name: "block", cfg: cdpguard.Config{Block: []string{"http://"}}, field: "Block", entry: "http://"},
		{name: "host map", cfg: cdpguard.Config{HostMap: []string{"*.test=not-an-ip"}}, field: "HostMap", entry: "*.test=not-an-ip"},
		{name: "allow private", cfg: cdpguard.Config{AllowPrivate: []string{"10.0.0.0/8,nonsense"}}, field: "AllowPrivate", entry: "nonsense"},
		{name: "service workers", cfg: cdpguard.Config{ServiceWorkers: "sometimes"}, field: "ServiceWorkers", entry: "sometimes"},
		{name: "blocked navigation", cfg: cdpguard.Config{BlockedNavigation: "html"}, field: "BlockedNavigation", entry: "html"},
		{name: "browser message bytes negative", cfg: cdpguard.Config{BrowserMessageBytes: -1}, field: "BrowserMessageBytes", entry: "-1"},
		{name: "browser message bytes tiny", cfg: cdpguard.Config{BrowserMessageBytes: 4096}, field: "BrowserMessageBytes", entry: "4096"},
		{name: "chrome flag", cfg: cdpguard.Config{ChromePath: "/bin/true", ChromeFlags: []string{"--remote-debugging-port=9999"}}, field: "ChromeFlags", entry: "--remote-debugging-port=9999"},
		{name: "missing browser", cfg: cdpguard.Config{ChromePath: "/nonexistent/chromium"}, noBrowser: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			g, err := cdpguard.Launch(ctx, c.cfg)
			if err == nil {
				_ = g.Close()
				t.Fatal("Launch succeeded")
			}
			if !errors.Is(err, cdpguard.ErrSetup) {
				t.Errorf("%v does not wrap ErrSetup", err)
			}
			if got := errors.Is(err, cdpguard.ErrNoBrowser); got != c.noBrowser {
				t.Errorf("errors.Is(%v, ErrNoBrowser) = %v, want %v", err, got, c.noBrowser)
			}
			var ce *cdpguard.ConfigError
			if !errors.As(err, &ce) {
				if c.field != "" {
					t.Fatalf("%v is not a *ConfigError", err)
				}
				return
			}
			if c.field == "" {
				t.Fatalf("%v is a *ConfigError, want none", err)
			}
			if ce.Field != c.field || ce.Entry != c.entry || ce.Reason == "" {
				t.Errorf("ConfigError = %+v, want field %s entry %q and a reason", ce, c.field, c.entry)
			}
			if !strings.Contains(err.Error(), c.entry) {
				t.Errorf("message %q does not name the entry", err)
			}
		})
	}
}

// TestAttachErrorWrapsSetup: a browser that cannot be reached is a setup
// error too.
func TestAttachErrorWrapsSetup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, err := cdpguard.Attach(ctx, "ftp://127.0.0.1:1", cdpguard.Config{})
	if err == nil {
		_ = g.Close()
		t.Fatal("Attach succeeded")
	}
	if !errors.Is(err, cdpguard.ErrSetup) {
		t.Errorf("%v does not wrap ErrSetup", err)
	}
	var ce *cdpguard.ConfigError
	if errors.As(err, &ce) || errors.Is(err, cdpguard.ErrNoBrowser) {
		t.Errorf("%v: an unreachable browser is neither a ConfigError nor ErrNoBrowser", err)
	}
}
