package cdpguard_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cdpguard/cdpguard/cdpguard"
)

// ExampleConfigError tells a bad allowlist entry (the operator's to fix)
// from a missing browser (the machine's). Start-up checks the configuration
// before it looks for a browser, so this runs anywhere.
func ExampleConfigError() {
	_, err := cdpguard.Launch(context.Background(), cdpguard.Config{
		Allow: []string{"example.com; example.org/docs"},
	})
	var ce *cdpguard.ConfigError
	switch {
	case errors.As(err, &ce):
		fmt.Printf("fix %s entry %q: %s\n", ce.Field, ce.Entry, ce.Reason)
	case errors.Is(err, cdpguard.ErrNoBrowser):
		fmt.Println("install chromium or set ChromePath")
	case err != nil:
		fmt.Println("other start-up error:", err)
	}
	fmt.Println(errors.Is(err, cdpguard.ErrSetup))
	// Output:
	// fix Allow entry "example.org/docs": paths are not allowed
	// true
}
