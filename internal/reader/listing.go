package reader

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Listing bounds: a listing is cardsMin or more sibling blocks of one kind
// (tag and class, not paragraphs), each opening with a link (its name),
// holding one of two words or more and text besides links, that together hold cardsShare of the main content's text.
const (
	cardsMin   = 4
	cardsShare = 0.6
)

// listing reports whether root, the main content picked, is a listing: a
// shop's results, a catalogue, whose entries are cards (a linked name, a
// price, a line of description). Its cards are the page's text, though
// each reads as a teaser of another page, and its prices are lines
// without letters.
func listing(root *html.Node) bool {
	total, _ := textAndLinkLen(root)
	if total == 0 {
		return false
	}
	found := false
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		kinds := map[string][]*html.Node{}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && !skipped[c.DataAtom] && !hidden(c) {
				k := c.Data + "." + attr(c, "class")
				kinds[k] = append(kinds[k], c)
			}
		}
		for _, cs := range kinds {
			if len(cs) < cardsMin {
				continue
			}
			text := 0
			for _, c := range cs {
				t, links := textAndLinkLen(c)
				if links == 0 || links >= t || c.DataAtom == atom.P || !namedLink(c) || !startsWithLink(c) {
					text = 0
					break
				}
				text += t
			}
			if float64(text) >= cardsShare*float64(total) {
				found = true
				return
			}
		}
		for c := n.FirstChild; c != nil && !found; c = c.NextSibling {
			if c.Type == html.ElementNode && !skipped[c.DataAtom] {
				walk(c)
			}
		}
	}
	walk(root)
	return found
}

// namedLink reports whether n holds a link of two words or more.
func namedLink(n *html.Node) bool {
	if n.Type == html.ElementNode && n.Data == "a" {
		return len(strings.Fields(innerText(n))) >= 2
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && !skipped[c.DataAtom] && namedLink(c) {
			return true
		}
	}
	return false
}

// startsWithLink reports whether the first text under n is a link's.
func startsWithLink(n *html.Node) bool {
	var first func(m *html.Node, inLink bool) (found, link bool)
	first = func(m *html.Node, inLink bool) (bool, bool) {
		for c := m.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				if strings.TrimSpace(c.Data) != "" {
					return true, inLink
				}
			case html.ElementNode:
				if skipped[c.DataAtom] || hidden(c) {
					continue
				}
				if found, link := first(c, inLink || c.DataAtom == atom.A); found {
					return true, link
				}
			}
		}
		return false, false
	}
	_, link := first(n, false)
	return link
}
