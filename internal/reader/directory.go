package reader

import (
	"regexp"
	"strings"
	"unicode/utf8"

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
	directoryStats(root)
}

// directoryStats returns the text under n (as textAndLinkLen counts it)
// and whether a text node under it holds an "@", after marking the
// directories among its descendants. One pass, children before their
// parent.
func directoryStats(n *html.Node) (text int, at bool) {
	switch {
	case n.Type == html.TextNode:
		return utf8.RuneCountInString(strings.Join(strings.Fields(n.Data), " ")), strings.IndexByte(n.Data, '@') >= 0
	case n.Type != html.ElementNode || skipped[n.DataAtom] || hidden(n):
		return 0, false
	}
	var run []*html.Node
	flush := func() {
		if len(run) >= directoryMin {
			for _, c := range run {
				c.Attr = append(c.Attr, html.Attribute{Key: attrDirectory, Val: "1"})
			}
		}
		run = run[:0]
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		t, a := directoryStats(c)
		text += t
		at = at || a
		if c.Type != html.ElementNode || t == 0 {
			continue // an empty block (a picture, a spacer) does not end a run
		}
		if a && t < chromeLineMax && emailAddress.MatchString(innerText(c)) {
			run = append(run, c)
			continue
		}
		flush()
	}
	flush()
	return text, at
}

// inDirectory reports whether markDirectories marked n.
func inDirectory(n *html.Node) bool { return attr(n, attrDirectory) != "" }
