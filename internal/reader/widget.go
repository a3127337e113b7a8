package reader

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// widgetTextMax is the text under which a block that holds (or heads) a
// row of controls is that widget's caption: "Share this article?", "Was
// this article helpful?" over share icons or rating stars.
const widgetTextMax = 100

// widgetControlsMin is the least controls a widget holds: one icon link
// can be a logo or a picture, three in a row are a share bar or stars.
const widgetControlsMin = 3

// markWidgets marks under root (attrWidget) each short block that
// captions a row of controls: it holds widgetControlsMin controls itself
// ("Möchten Sie den Artikel teilen?" over share icons, "War der Artikel
// nützlich?" over rating stars), or the block after it has no text and
// holds them (a heading over a share bar). The caption says so in the
// site's own language; what gives it away is what the renderer drew
// beside it, icons and stars, not words. It marks a picture's caption too
// (pictureCaption), here because the post's own tree (cutPost) leaves out
// the picture that gives it away. It runs before the Readability port,
// which removes share bars by their class names and would leave the
// caption alone; the cleaning removes what it marked (removing it before
// the port would change the port's pick). One pass, children before their
// parent; a block inside a marked one is not marked.
//
// It returns the captions' texts: the port rebuilds a block that holds
// only inline content as a new paragraph, without the mark, and
// markAgain finds it there by its text.
func markWidgets(root *html.Node) map[string]bool {
	captions := map[string]bool{}
	widgetStats(root, captions)
	return captions
}

// markAgain marks under root the blocks whose text is one of captions
// (markWidgets' texts) that lost their mark in the Readability port.
func markAgain(root *html.Node, captions map[string]bool) {
	if len(captions) == 0 {
		return
	}
	var walk func(n *html.Node) int
	walk = func(n *html.Node) int {
		switch {
		case n.Type == html.TextNode:
			return len(strings.TrimSpace(n.Data))
		case n.Type != html.ElementNode || skipped[n.DataAtom] || hidden(n):
			return 0
		}
		size := 0
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			size += walk(c)
		}
		if size > 0 && size <= 4*widgetTextMax && !isWidget(n) && captions[innerText(n)] {
			n.Attr = append(n.Attr, html.Attribute{Key: attrWidget, Val: "1"})
		}
		return size
	}
	walk(root)
}

// attrWidget marks a widget's caption for the cleaning.
const attrWidget = "data-cdpguard-widget"

// isWidget reports whether markWidgets marked n.
func isWidget(n *html.Node) bool { return attr(n, attrWidget) != "" }

// dropWidgets removes what markWidgets marked under root.
func dropWidgets(root *html.Node) {
	for c := root.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode {
			if isWidget(c) {
				root.RemoveChild(c)
			} else {
				dropWidgets(c)
			}
		}
		c = next
	}
}

// widgetStats returns the text (as textAndLinkLen counts it) and the
// controls under n, after removing the widget captions among its
// descendants. A control is a link holding only an icon or a picture, or
// a textless element that acts on a click (a rating star).
func widgetStats(n *html.Node, captions map[string]bool) (text, ctrl int) {
	switch n.Type {
	case html.TextNode:
		return utf8.RuneCountInString(strings.Join(strings.Fields(n.Data), " ")), 0
	case html.ElementNode:
		if hidden(n) {
			return 0, 0
		}
		if skipped[n.DataAtom] {
			if attr(n, "onclick") != "" {
				return 0, 1
			}
			return 0, 0
		}
	case html.DocumentNode:
	default:
		return 0, 0
	}
	var kids []kid
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		t, k := widgetStats(c, captions)
		kids = append(kids, kid{c, t, k})
	}
	for i, k := range kids {
		if k.n.Type != html.ElementNode || k.text == 0 || k.text > captionTextMax || keepWidget[k.n.DataAtom] || k.n.DataAtom == atom.A {
			continue
		}
		short := k.text <= widgetTextMax
		caption := short && k.ctrl >= widgetControlsMin
		for j := i + 1; short && !caption && j < len(kids); j++ {
			if m := kids[j]; m.n.Type == html.ElementNode {
				caption = m.text == 0 && m.ctrl >= widgetControlsMin
				break
			} else if m.text > 0 {
				break
			}
		}
		if !caption {
			caption = pictureCaption(k.n, textless(kids, i, -1), textless(kids, i, 1))
		}
		if caption {
			unmark(k.n)
			captions[innerText(k.n)] = true
			k.n.Attr = append(k.n.Attr, html.Attribute{Key: attrWidget, Val: "1"})
			kids[i].text, kids[i].ctrl = 0, 0
		}
	}
	for _, k := range kids {
		text += k.text
		ctrl += k.ctrl
	}
	if n.Type == html.ElementNode && text == 0 && (n.DataAtom == atom.A && attr(n, "href") != "" || attr(n, "onclick") != "") {
		return 0, 1
	}
	return text, ctrl
}

// unmark removes the marks under n: its whole block goes.
func unmark(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		for i, a := range c.Attr {
			if a.Key == attrWidget {
				c.Attr = append(c.Attr[:i], c.Attr[i+1:]...)
				break
			}
		}
		unmark(c)
	}
}

// textless returns the element just before (dir -1) or after (dir 1)
// kids[i] when it has no text, nil when text or nothing comes first.
func textless(kids []kid, i, dir int) *html.Node {
	for j := i + dir; j >= 0 && j < len(kids); j += dir {
		switch k := kids[j]; {
		case k.n.Type == html.ElementNode:
			if k.text == 0 {
				return k.n
			}
			return nil
		case k.text > 0:
			return nil
		}
	}
	return nil
}

// kid is a child node with its text and controls (widgetStats).
type kid struct {
	n          *html.Node
	text, ctrl int
}

// keepWidget are elements never taken for a widget's caption: the page's
// frame and table cells (a data table's rows hold icon links).
var keepWidget = map[atom.Atom]bool{
	atom.Html: true, atom.Body: true, atom.Main: true, atom.Article: true,
	atom.Table: true, atom.Tbody: true, atom.Thead: true, atom.Tr: true, atom.Td: true, atom.Th: true,
}

// seeAlso matches a short line that points to another story of the site
// in the languages of the evaluation's pages: "Also read: …", "VEA
// TAMBIÉN: …", "Lesen Sie auch: …", "À lire aussi : …".
var seeAlso = regexp.MustCompile(`(?i)^(read also|also read|(vea|lea|lee|mira|ver) tambi[eé]n|(lesen sie|lies) auch|mehr zum thema|(à |a )?lire aussi|leia tamb[eé]m|leggi anche)\b\s*:`)

// seeAlsoStarts are the lower-cased ASCII starts of every seeAlso match
// (its gate, see fastmatch.go).
var seeAlsoStarts = []string{"read also", "also read", "vea tambi", "lea tambi", "lee tambi", "mira tambi", "ver tambi", "lesen sie auch", "lies auch", "mehr zum thema", "lire aussi", "a lire aussi", "leia tamb", "leggi anche"}

// isSeeAlso is seeAlso.MatchString(t), gated.
func isSeeAlso(t string) bool {
	if !foldRisk(t) && !hasAnyPrefix(lowerASCII(t), seeAlsoStarts) && !strings.HasPrefix(strings.ToLower(t), "à ") {
		return false
	}
	return seeAlso.MatchString(t)
}
