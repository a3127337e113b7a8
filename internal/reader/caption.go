package reader

import (
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// captionTextMax is the longest caption the picture rule looks at.
const captionTextMax = 400

// altMin is the shortest alt text that can name a caption: "Photo",
// "Tasmanian tiger" describe a picture, not a sentence under it.
const altMin = 30

// pictureCaption reports whether n (with at most captionTextMax
// characters of text) is the caption of a picture beside it: the element just before
// or after it (no text between them) is a picture, or a wrapper holding
// one and no text, whose alt or title text is n's text or its start.
// Pages write the caption twice, once for the picture's tooltip and once
// under it, where the renderer shows it as a line of its own.
func pictureCaption(n *html.Node) bool {
	prev, next := siblingElement(n, -1), siblingElement(n, 1)
	if prev == nil && next == nil {
		return false
	}
	t := strings.ToLower(innerText(n))
	return prev != nil && describes(prev, t) || next != nil && describes(next, t)
}

// siblingElement returns the element just before (dir -1) or after (dir
// 1) n, nil when text or nothing comes first.
func siblingElement(n *html.Node, dir int) *html.Node {
	step := func(c *html.Node) *html.Node {
		if dir < 0 {
			return c.PrevSibling
		}
		return c.NextSibling
	}
	for c := step(n); c != nil; c = step(c) {
		switch {
		case c.Type == html.ElementNode:
			return c
		case c.Type == html.TextNode && strings.TrimSpace(c.Data) != "":
			return nil
		}
	}
	return nil
}

// describes reports whether a picture under n (n itself, or inside a
// wrapper that holds no text) has an alt or title that t starts with.
func describes(n *html.Node, t string) bool {
	if n.DataAtom == atom.Img {
		for _, k := range []string{"alt", "title"} {
			if a := strings.ToLower(oneLine(attr(n, k))); len(a) >= altMin && strings.HasPrefix(t, a) {
				return true
			}
		}
		return false
	}
	if tl, _ := textAndLinkLen(n); tl > 0 {
		return false
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && describes(c, t) {
			return true
		}
	}
	return false
}
