package main

import (
	"os"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestEgressListenFlag: --egress-listen and CDPGUARD_EGRESS_LISTEN reach
// Config.EgressListen in serve and attach; the default is a random
// loopback port.
func TestEgressListenFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"serve"}, "", "127.0.0.1:0"},
		{[]string{"serve", "--egress-listen", "127.0.0.1:8899"}, "", "127.0.0.1:8899"},
		{[]string{"attach", "--browser-url", "http://127.0.0.1:1"}, "127.0.0.1:8898", "127.0.0.1:8898"},
	} {
		t.Setenv("CDPGUARD_EGRESS_LISTEN", tc.env)
		if tc.env == "" {
			_ = os.Unsetenv("CDPGUARD_EGRESS_LISTEN") // t.Setenv restores it
		}
		app := newApp()
		got := "(not run)"
		for _, c := range app.Commands {
			c.Action = func(ctx *cli.Context) error {
				got = config(ctx, nil).EgressListen
				return nil
			}
		}
		if err := app.Run(append([]string{"cdpguard"}, tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got != tc.want {
			t.Errorf("%v CDPGUARD_EGRESS_LISTEN=%q: EgressListen=%q, want %q", tc.args, tc.env, got, tc.want)
		}
	}
}
