package main

import (
	"errors"
	"fmt"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// flagOf names the flag that sets each Config field a *cdpguard.ConfigError
// can name.
var flagOf = map[string]string{
	"Allow":             "--allow",
	"Block":             "--block",
	"HostMap":           "--host-map",
	"AllowPrivate":      "--allow-private",
	"ChromeFlags":       "--chrome-flag",
	"ServiceWorkers":    "--service-workers",
	"BlockedNavigation": "--blocked-navigation",
	"PolicyFile":        "--policy-file",
}

// describe words a start-up error for the command line: a configuration
// error names the flag the operator wrote rather than the Config field.
func describe(err error) string {
	var ce *cdpguard.ConfigError
	if errors.As(err, &ce) {
		if f, ok := flagOf[ce.Field]; ok {
			return fmt.Sprintf("invalid %s entry %q: %s", f, ce.Entry, ce.Reason)
		}
	}
	if errors.Is(err, cdpguard.ErrNoBrowser) {
		return fmt.Sprintf("%v (install chromium, or give --chrome or CHROME_PATH)", err)
	}
	return err.Error()
}
