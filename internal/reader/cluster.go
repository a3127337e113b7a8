package reader

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// asideName matches class and id words of blocks whose running text is
// not the article's: comments and replies, teasers of other stories.
var asideName = regexp.MustCompile(`comment|repl(y|ies)|respon|discuss|related|teaser|promo|recommend|sidebar|newsletter`)

// Prose bounds: a block's own text (its inline content) is prose when it
// holds at least proseMin characters with under proseLinks of them in
// links; the cluster score charges other text at otherCost a character.
const (
	proseMin   = 80
	proseLinks = 0.4
	otherCost  = 0.5
)

// proseCluster finds the element that best holds the page's prose: the
// paragraphs of running text (long, few links) minus, at otherCost, the
// rest of the text around them (menus, lists of links, teasers). It is the
// reader's own candidate beside the Readability port's: it needs no class
// names, and the renderer's view (only rendered elements are in the DOM
// read.js writes; boxes mark blocks) is what it counts. It returns the
// element and its prose characters (nil, 0 on a page without prose), and
// the prose characters under root.
func proseCluster(root *html.Node) (best *html.Node, bestProse, total int) {
	bestScore := 0.0
	var walk func(n *html.Node, aside bool) (prose, text int)
	walk = func(n *html.Node, aside bool) (prose, text int) {
		aside = aside || asideNamed(n)
		own, ownLinks := 0, 0
		var inline func(m *html.Node, inLink bool)
		inline = func(m *html.Node, inLink bool) {
			for c := m.FirstChild; c != nil; c = c.NextSibling {
				switch c.Type {
				case html.TextNode:
					k := utf8.RuneCountInString(strings.Join(strings.Fields(c.Data), " "))
					own += k
					if inLink {
						ownLinks += k
					}
				case html.ElementNode:
					if skipped[c.DataAtom] || hidden(c) {
						continue
					}
					if blocks[c.DataAtom] || attr(c, attrBox) != "" {
						p, t := walk(c, aside)
						prose, text = prose+p, text+t
					} else {
						inline(c, inLink || c.DataAtom == atom.A)
					}
				}
			}
		}
		inline(n, n.DataAtom == atom.A)
		text += own
		if !aside && own >= proseMin && float64(ownLinks) < proseLinks*float64(own) {
			prose += own
		}
		if score := float64(prose) - otherCost*float64(text-prose); score > bestScore {
			best, bestScore, bestProse = n, score, prose
		}
		return prose, text
	}
	total, _ = walk(root, false)
	return best, bestProse, total
}

// asideNamed reports whether the element n is named as an aside. The body
// and the root are not: a theme names the page's layout there
// ("sidebar-left", "has-related-posts").
func asideNamed(n *html.Node) bool {
	return n.Type == html.ElementNode && n.DataAtom != atom.Body && n.DataAtom != atom.Html &&
		asideName.MatchString(strings.ToLower(attr(n, "class")+" "+attr(n, "id")))
}

// teaserList reports whether n reads as a list of other stories: three or
// more headings that are links, outside blocks named as asides (an
// article's own "related posts" box under it does not make it a list).
func teaserList(n *html.Node) bool {
	count := 0
	var walk func(*html.Node)
	walk = func(m *html.Node) {
		for c := m.FirstChild; c != nil && count < 3; c = c.NextSibling {
			if c.Type != html.ElementNode || asideNamed(c) {
				continue
			}
			switch c.DataAtom {
			case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
				if text, links := textAndLinkLen(c); text > 0 && links*2 > text {
					count++
				}
				continue
			}
			walk(c)
		}
	}
	walk(n)
	return count >= 3
}

// teaserItem reports whether n reads as a teaser of another story: its
// first line is a link of two words or more, set apart (a line break or a
// block follows), with more text after it (the summary).
func teaserItem(n *html.Node) bool {
	var first *html.Node
	c := n.FirstChild
	for ; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode && strings.TrimSpace(c.Data) == "" {
			continue
		}
		if c.Type == html.ElementNode && (skipped[c.DataAtom] || hidden(c)) {
			continue
		}
		if c.Type == html.ElementNode && c.DataAtom != atom.A && c.DataAtom != atom.Br {
			if text, _ := textAndLinkLen(c); text == 0 {
				continue
			}
		}
		first = c
		break
	}
	if first == nil || first.Type != html.ElementNode || first.DataAtom != atom.A {
		return false
	}
	title, _ := textAndLinkLen(first)
	if title == 0 || len(strings.Fields(innerText(first))) < 2 {
		return false
	}
	next := first.NextSibling
	for next != nil && next.Type == html.TextNode && strings.TrimSpace(next.Data) == "" {
		next = next.NextSibling
	}
	if next == nil || next.Type != html.ElementNode || (next.DataAtom != atom.Br && !blocks[next.DataAtom]) {
		return false
	}
	text, _ := textAndLinkLen(n)
	return text > title
}

// teaserBlock reports whether n is a list of teasers: three or more teaser
// items within three levels under it, holding most of its text.
func teaserBlock(n *html.Node) bool {
	count, teaserText := 0, 0
	var walk func(m *html.Node, depth int)
	walk = func(m *html.Node, depth int) {
		for c := m.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || skipped[c.DataAtom] {
				continue
			}
			if teaserItem(c) {
				count++
				t, _ := textAndLinkLen(c)
				teaserText += t
				continue
			}
			if depth < 3 {
				walk(c, depth+1)
			}
		}
	}
	walk(n, 1)
	if count < 3 {
		return false
	}
	text, _ := textAndLinkLen(n)
	return float64(teaserText) >= teaserShare*float64(text)
}

// teaserShare is the least share of a block's text its teasers hold for it
// to be a teaser list.
const teaserShare = 0.6
