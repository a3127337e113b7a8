package cdpguard

import "errors"

// grantHost is a stub until the grants branch is merged (the lead deletes
// this file then).
func (g *Guard) grantHost(targetID, host, via string) (string, error) {
	return "", errors.New("session grants are not built yet")
}

// grantedHosts is a stub until the grants branch is merged.
func (g *Guard) grantedHosts(targetID string) []string { return nil }
