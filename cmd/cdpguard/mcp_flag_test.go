package main

import (
	"os"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestMCPFlag: /mcp is on by default in serve and attach; --mcp=false and
// CDPGUARD_MCP=false turn it off.
func TestMCPFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		env     string
		disable bool
	}{
		{[]string{"serve"}, "", false},
		{[]string{"serve", "--mcp=false"}, "", true},
		{[]string{"serve"}, "false", true},
		{[]string{"attach", "--browser-url", "http://127.0.0.1:1"}, "", false},
		{[]string{"attach", "--browser-url", "http://127.0.0.1:1", "--mcp=false"}, "", true},
	} {
		t.Setenv("CDPGUARD_MCP", tc.env)
		if tc.env == "" {
			_ = os.Unsetenv("CDPGUARD_MCP") // t.Setenv restores it
		}
		app := newApp()
		var got *bool
		for _, c := range app.Commands {
			c.Action = func(ctx *cli.Context) error {
				d := config(ctx, nil).DisableMCP
				got = &d
				return nil
			}
		}
		if err := app.Run(append([]string{"cdpguard"}, tc.args...)); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got == nil || *got != tc.disable {
			t.Errorf("%v CDPGUARD_MCP=%q: DisableMCP=%v, want %v", tc.args, tc.env, got, tc.disable)
		}
	}
}
