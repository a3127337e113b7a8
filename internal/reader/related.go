package reader

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// relatedHeading matches the headings of a site's own sections of other
// stories: "Related Stories", "Recommended for you", "More from …",
// "Most read", and their German, Spanish, French, Portuguese, Italian and
// Polish kin ("Das könnte dich auch interessieren", "Noticias
// relacionadas", "À lire aussi"). "See also" and "Further reading" are not among them: a
// document's own references are its text.
var relatedHeading = regexp.MustCompile(`(?i)^(related( stories| articles| posts| content| news| coverage| links| videos?)?|recommended( for you| stories| articles| reading)?|more (stories|news|headlines|videos?|from .{1,40}|on this( story| topic)?|in .{1,30})|you (may|might) (also )?(like|enjoy|be interested in)|read (next|also)|most (read|popular|viewed|shared|emailed)|trending( now| stories)?|popular (now|stories|articles)|top stories|latest (news|stories|headlines)|(das )?(könnte|dürfte) (dich|sie|euch) auch interessieren|mehr zum thema|weitere (artikel|beiträge|nachrichten)|auch interessant|empfohlen von .{1,40}|(también )?te puede interesar|(noticias|artículos|notas) relacionad[oa]s|(à|a) lire aussi|sur le même sujet|articles? (similaires|liés|connexes)|leia também|potrebbe interessarti|czytaj (także|też)|zobacz (także|też))\s*:?$`)

// headingLevel returns 1 to 6 for h1 to h6, 0 for another node.
func headingLevel(n *html.Node) int {
	switch n.DataAtom {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

// dropRelatedSections removes, under root, each heading that names a
// section of other stories (relatedHeading) together with what follows it
// up to the next heading of its level or above: the teasers under
// "Related Stories" are not the article's text, though each reads as
// prose. A heading alone in its wrapper (a div around an h2) counts from
// the wrapper.
func dropRelatedSections(root *html.Node) {
	var found []*html.Node
	var find func(*html.Node)
	find = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if lvl := headingLevel(c); lvl >= 2 {
				if relatedHeading.MatchString(strings.TrimSpace(oneLine(innerText(c)))) {
					found = append(found, c)
				}
				continue
			}
			find(c)
		}
	}
	find(root)
	total, _ := textAndLinkLen(root)
	for _, h := range found {
		if h.Parent == nil {
			continue // removed with an earlier section
		}
		lvl := headingLevel(h)
		start := h
		for start.Parent != nil && start.Parent != root && onlyElement(start.Parent, start) {
			start = start.Parent
		}
		section := []*html.Node{start}
		text, _ := textAndLinkLen(start)
		for c := start.NextSibling; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && startsSection(c, lvl) {
				break
			}
			section = append(section, c)
			t, _ := textAndLinkLen(c)
			text += t
		}
		if text*2 > total {
			continue // half the text: the heading sits inside the article, a box beside its paragraphs
		}
		for _, c := range section {
			c.Parent.RemoveChild(c)
		}
	}
}

// onlyElement reports whether c is the one element child of n with text
// (the rest being white space).
func onlyElement(n, c *html.Node) bool {
	for k := n.FirstChild; k != nil; k = k.NextSibling {
		if k == c {
			continue
		}
		if k.Type == html.TextNode && strings.TrimSpace(k.Data) != "" {
			return false
		}
		if k.Type == html.ElementNode {
			if text, _ := textAndLinkLen(k); text > 0 {
				return false
			}
		}
	}
	return true
}

// startsSection reports whether n is, or starts with, a heading of level
// lvl or above (a smaller number).
func startsSection(n *html.Node, lvl int) bool {
	for ; n != nil; n = firstElement(n) {
		if l := headingLevel(n); l > 0 {
			return l <= lvl
		}
	}
	return false
}

// firstElement returns n's first element child with text, nil when none.
func firstElement(n *html.Node) *html.Node {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode && strings.TrimSpace(c.Data) != "" {
			return nil
		}
		if c.Type == html.ElementNode {
			if text, _ := textAndLinkLen(c); text > 0 {
				return c
			}
		}
	}
	return nil
}
