package cdpguard

// EgressProxyURL returns the egress proxy's URL (http://127.0.0.1:port).
// In attach mode the human's own tabs (Chrome's default context) get the
// proxy layer only when that browser was started with
// --proxy-server=<this URL>: `cdpguard attach` prints how.
func (g *Guard) EgressProxyURL() string { return g.proxyURL }
