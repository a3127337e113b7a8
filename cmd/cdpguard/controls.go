package main

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"
)

// controlsFlag returns --controls: as given, or else on for a browser a
// human can see (--headed, attach) and off for headless serve.
func controlsFlag(c *cli.Context, human bool) bool {
	if c.IsSet("controls") {
		return c.Bool("controls")
	}
	return human
}

// printAttachNote tells the human at attach start-up what covers their own
// tabs: the guard's Fetch layer does; its egress proxy only when their
// browser was started with --proxy-server pointing at it.
func printAttachNote(w io.Writer, proxyURL string, fixed bool) {
	how := "this address changes at every start: fix it with --egress-listen 127.0.0.1:PORT"
	if fixed {
		how = "fixed by --egress-listen"
	}
	fmt.Fprintf(w, `cdpguard attach: agents only get browser contexts cdpguard creates, which all go through its egress proxy.
Your own tabs (the browser's default context) are judged by request interception only: WebSocket
handshakes, preconnects and DNS lookups from them are not judged. To cover them too, start the
browser with
    chromium --remote-debugging-port=9333 --proxy-server=%s --proxy-bypass-list='<-loopback>'
(%s).
`, proxyURL, how)
}
