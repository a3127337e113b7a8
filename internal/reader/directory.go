package reader

import (
	"regexp"

	"golang.org/x/net/html"
)

// emailAddress matches an e-mail address in a line of text.
var emailAddress = regexp.MustCompile(`[a-zA-Z0-9._-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}`)

// directoryMin is the least run of lines, each with an address, that
// makes a directory: a byline with an address stands alone.
const directoryMin = 3

// attrDirectory marks the lines of a directory for the cleaning.
const attrDirectory = "data-cdpguard-directory"

// markDirectories marks under root each run of directoryMin or more
// sibling blocks that are short lines, each holding an e-mail address
// ("Local: metro@… or 202.334.7300", "National: …"): a page's list of
// whom to write to is its text, though each line alone reads as the
// credit line of a story's writer (contactLine), which is left out.
func markDirectories(root *html.Node) {
	var run []*html.Node
	flush := func() {
		if len(run) >= directoryMin {
			for _, n := range run {
				n.Attr = append(n.Attr, html.Attribute{Key: attrDirectory, Val: "1"})
			}
		}
		run = run[:0]
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			text, _ := textAndLinkLen(c)
			if text == 0 {
				continue // an empty block (a picture, a spacer) does not end a run
			}
			if text < chromeLineMax && emailAddress.MatchString(innerText(c)) {
				run = append(run, c)
				continue
			}
			flush()
			walk(c)
		}
		flush()
	}
	walk(root)
}

// inDirectory reports whether markDirectories marked n.
func inDirectory(n *html.Node) bool { return attr(n, attrDirectory) != "" }
