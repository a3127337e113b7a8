package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// readCommand is `cdpguard read URL`: the quickest way to try cdpguard. It
// launches its own guarded browser on a free loopback port, reads the page
// (policy, egress proxy and reader as in serve), prints its text and exits.
func readCommand() *cli.Command {
	flags := policyFlags()
	for _, f := range commonFlags() {
		if slices.Contains([]string{"host-map", "allow-private", "search-url", "log-format"}, f.Names()[0]) {
			flags = append(flags, f)
		}
	}
	flags = append(flags,
		&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "debug, info, warn or error", EnvVars: []string{"CDPGUARD_LOG_LEVEL"}},
		&cli.DurationFlag{Name: "timeout", Value: 60 * time.Second, Usage: "bound on the whole run (browser start, load, read)"},
	)
	return &cli.Command{
		Name:      "read",
		Usage:     "launch a guarded browser, print the readable text of URL and exit",
		ArgsUsage: "URL",
		Flags:     append(flags, launchFlags()...),
		Action:    readPage,
	}
}

func readPage(c *cli.Context) error {
	if c.NArg() != 1 {
		return errors.New("read: give one URL")
	}
	if err := checkPolicyFlags(c); err != nil {
		return err
	}
	log, err := newLogger(c)
	if err != nil {
		return err
	}
	cfg := config(c, log)
	cfg.Listen = "127.0.0.1:0"
	cfg.ChromePath = c.String("chrome")
	cfg.Headed = c.Bool("headed")
	cfg.ChromeFlags = splitChromeFlags(c.StringSlice("chrome-flag"))
	cfg.UserDataDir = c.String("user-data-dir")
	if err := cdpguard.CheckRead(cfg, c.Args().First()); err != nil {
		return err // before a browser starts
	}
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	g, err := cdpguard.Launch(ctx, cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	for offset := 0; ; {
		r, err := g.Read(ctx, "", c.Args().First(), offset, 0)
		if err != nil {
			return err
		}
		fmt.Fprint(c.App.Writer, r.Text)
		if r.NextOffset == nil {
			fmt.Fprintln(c.App.Writer)
			return nil
		}
		offset = *r.NextOffset
	}
}
