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
// characters of text) is the caption of a picture beside it: prev or
// next, the elements just before and after it when they hold no text,
// is a picture or holds one whose alt or title text is n's text or its
// start. Pages write the caption twice, once for the picture's tooltip
// and once under it, where the renderer shows it as a line of its own.
func pictureCaption(n, prev, next *html.Node) bool {
	t := ""
	for _, c := range []*html.Node{prev, next} {
		if c == nil {
			continue
		}
		if t == "" {
			t = strings.ToLower(innerText(n))
		}
		if describes(c, t) {
			return true
		}
	}
	return false
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
