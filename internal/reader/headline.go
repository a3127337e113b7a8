package reader

import (
	"fmt"
	"index/suffixarray"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// postEndName matches class and id words of the blocks that end a post
// under its headline: comments and responses. Nothing after them is the
// post's.
var postEndName = regexp.MustCompile(`comment|repl(y|ies)|respond|responses|discuss`)

// postAsideName matches class and id words of the blocks inside or after a
// post that are not its text: the author or profile box, other stories, a
// newsletter box. A short post is followed by them, and each can hold more
// prose than the post; they are left out of it. Side bars are told by
// their place, not their name: themes name the layout that holds the
// article "sidebar" too ("l-sidebar-fixed").
var postAsideName = regexp.MustCompile(`author|(^|[^a-z])bio|profile|about|related|teaser|promo|recommend|newsletter|signature|postmeta|entry-?meta|post-?footer`)

// postAsideText matches the wording of a blog's footer under a post.
var postAsideText = regexp.MustCompile(`(?i)follow any responses|leave a (response|reply|comment)|trackback|rss 2\.0|view my complete profile`)

// postEndRole are the ARIA landmarks that are not a post's text.
var postEndRole = map[string]bool{"contentinfo": true, "complementary": true, "navigation": true, "banner": true}

// Post bounds, in characters of text.
const (
	postMin      = 60  // the least text under the headline that is a post
	postSkipMax  = 500 // link text in a row after which the post has ended
	postKeyChars = 30  // letters and digits that identify a block's text
)

// leaf is a block's own text (its inline content), in document order.
type leaf struct {
	n            *html.Node
	text, links  int
	own          string // its own text, whitespace collapsed
	norm         string // all its letters and digits, lower case
	box          box
	headingLevel int
}

// box is a block's rendered box in document pixels, as read.js wrote it.
type box struct {
	x, y, w, h float64
	ok         bool
}

// boxOf returns the renderer's box of n or of its nearest annotated
// ancestor.
func boxOf(n *html.Node) box {
	for ; n != nil; n = n.Parent {
		if n.Type != html.ElementNode {
			continue
		}
		v := attr(n, attrBox)
		if v == "" {
			continue
		}
		f := strings.Split(v, ",")
		if len(f) != 4 {
			return box{}
		}
		var b [4]float64
		for i, s := range f {
			x, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return box{}
			}
			b[i] = x
		}
		return box{x: b[0], y: b[1], w: b[2], h: b[3], ok: true}
	}
	return box{}
}

// overlaps reports whether a and b share a column: their horizontal
// extents overlap. Boxes the renderer did not write overlap anything.
func (a box) overlaps(b box) bool {
	if !a.ok || !b.ok || a.w <= 0 || b.w <= 0 {
		return true
	}
	return a.x < b.x+b.w && b.x < a.x+a.w
}

// leaves returns the blocks under root that hold text of their own, in
// document order.
func leaves(root *html.Node) []leaf {
	var out []leaf
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		var own strings.Builder
		text, links := 0, 0
		idx := len(out)
		out = append(out, leaf{n: n, headingLevel: headingLevel(n)})
		var inline func(m *html.Node, inLink bool)
		inline = func(m *html.Node, inLink bool) {
			for c := m.FirstChild; c != nil; c = c.NextSibling {
				switch c.Type {
				case html.TextNode:
					s := strings.Join(strings.Fields(c.Data), " ")
					k := utf8.RuneCountInString(s)
					text += k
					if inLink {
						links += k
					}
					own.WriteString(s)
				case html.ElementNode:
					if skipped[c.DataAtom] || hidden(c) {
						continue
					}
					if blocks[c.DataAtom] || attr(c, attrBox) != "" {
						walk(c)
					} else {
						inline(c, inLink || c.DataAtom == atom.A)
					}
				}
			}
		}
		inline(n, n.DataAtom == atom.A)
		l := &out[idx]
		l.text, l.links = text, links
		l.own = own.String()
		l.norm = alnum(l.own)
		l.box = boxOf(n)
	}
	walk(root)
	kept := out[:0]
	for _, l := range out {
		if l.text > 0 {
			kept = append(kept, l)
		}
	}
	return kept
}

// alnum returns the letters and digits of s, lower case: texts compared
// across the writer (which adds markers and breaks) and the tree.
func alnum(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// headline returns the page's own headline under body: the heading (h1
// to h3) whose text the title or og:title holds, the longest such, an h1
// before an h2 on a tie; nil when none is.
func headline(doc, body *html.Node, title string) *html.Node {
	titles := []string{strings.ToLower(oneLine(title))}
	if doc == nil {
		// no head: the title alone
	} else if og := ogTitle(doc); og != "" {
		titles = append(titles, strings.ToLower(oneLine(og)))
	}
	var best *html.Node
	bestLen := 0
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || skipped[c.DataAtom] || hidden(c) {
				continue
			}
			if lvl := headingLevel(c); lvl >= 1 && lvl <= 3 {
				h := strings.ToLower(innerText(c))
				k := utf8.RuneCountInString(h)
				for _, t := range titles {
					if k >= 3 && t != "" && strings.Contains(t, h) && (k*4 >= utf8.RuneCountInString(t) || k >= 15) &&
						(k > bestLen || (k == bestLen && lvl < headingLevel(best))) {
						best, bestLen = c, k
					}
				}
				continue
			}
			walk(c)
		}
	}
	walk(body)
	return best
}

// ogTitle returns the page's og:title, or "".
func ogTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Meta &&
		(attr(n, "property") == "og:title" || attr(n, "name") == "og:title") {
		return attr(n, "content")
	}
	if n.Type == html.ElementNode && n.DataAtom == atom.Body {
		return ""
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := ogTitle(c); t != "" {
			return t
		}
	}
	return ""
}

// post is the text under the page's headline, in its column, up to what
// ends it: a heading of the headline's level or above (the next post), a
// block to the side of the headline's column, the responses, a footer or
// a complementary block (endsPost), or postSkipMax characters of links in
// a row; author boxes and post footers inside it are left out
// (postAside).
type post struct {
	head, last *html.Node
	leaves     []leaf // the body's, the headline at start
	start      int
	drop       []*html.Node // author boxes, post footers: not its text
	prose      int          // characters of its blocks that are not link lists
	*judge
}

// findPost returns the post under the page's headline, or nil when the
// page has no headline or under postMin characters of text follow it.
func findPost(doc, body *html.Node, title string) *post {
	h := headline(doc, body, title)
	if h == nil {
		return nil
	}
	ls := leaves(body)
	start := -1
	for i, l := range ls {
		if l.n == h {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	col := boxOf(h)
	lvl := headingLevel(h)
	p := &post{head: h, leaves: ls, start: start, judge: newJudge(h)}
	skippedLinks := 0
	for _, l := range ls[start+1:] {
		if contains(h, l.n) {
			continue
		}
		if l.headingLevel > 0 && l.headingLevel <= lvl {
			break
		}
		if !col.overlaps(l.box) || p.endsPost(l.n) {
			break
		}
		if a := p.postAside(l); a != nil {
			if len(p.drop) == 0 || p.drop[len(p.drop)-1] != a {
				p.drop = append(p.drop, a)
			}
			continue
		}
		if l.links*2 > l.text {
			if skippedLinks += l.text; skippedLinks > postSkipMax {
				break
			}
			continue
		}
		skippedLinks = 0
		p.prose += l.text
		p.last = l.n
	}
	if p.prose < postMin || p.last == nil {
		return nil
	}
	return p
}

// judge tells, for the blocks after a headline, which end the post or
// stand beside it, judging each element once: a page's blocks share their
// ancestors, and a judgement made per block and ancestor costs the depth
// squared.
type judge struct {
	h     *html.Node
	above map[*html.Node]bool // h and its ancestors
	ends  map[*html.Node]bool
	aside map[*html.Node]bool
}

func newJudge(h *html.Node) *judge {
	j := &judge{h: h, above: map[*html.Node]bool{}, ends: map[*html.Node]bool{}, aside: map[*html.Node]bool{}}
	for n := h; n != nil; n = n.Parent {
		j.above[n] = true
	}
	return j
}

// endsPost reports whether n sits in a block that ends the post under the
// headline: an element between n and the nearest ancestor it shares with
// the headline that is a footer, an aside, a landmark other than the main
// one, or named as comments or responses, and holds postEndMin characters
// or more (a comment counter or an article's own footer line does not end
// it).
func (j *judge) endsPost(n *html.Node) bool {
	for m := n; m != nil && !j.above[m]; m = m.Parent {
		if m.Type != html.ElementNode {
			continue
		}
		end, ok := j.ends[m]
		if !ok {
			if m.DataAtom == atom.Footer || m.DataAtom == atom.Aside || postEndRole[attr(m, "role")] ||
				postEndName.MatchString(strings.ToLower(attr(m, "class")+" "+attr(m, "id"))) {
				text, _ := textAndLinkLen(m)
				end = text >= postEndMin
			}
			j.ends[m] = end
		}
		if end {
			return true
		}
	}
	return false
}

// postEndMin is the least text of a block that ends a post.
const postEndMin = 300

// postAside returns the block l sits in, below the nearest ancestor it
// shares with the headline, that is named as an author box, profile or the
// like, or l's element itself when its text is a blog's post footer; nil
// when neither.
func (j *judge) postAside(l leaf) *html.Node {
	for m := l.n; m != nil && !j.above[m]; m = m.Parent {
		if m.Type != html.ElementNode {
			continue
		}
		named, ok := j.aside[m]
		if !ok {
			named = postAsideName.MatchString(strings.ToLower(attr(m, "class") + " " + attr(m, "id")))
			j.aside[m] = named
		}
		if named {
			return m
		}
	}
	if l.text < 2*boilerTextMax && isPostAsideText(l.own) {
		return l.n
	}
	return nil
}

// contains reports whether n is a or under it.
func contains(a, n *html.Node) bool {
	for ; n != nil; n = n.Parent {
		if n == a {
			return true
		}
	}
	return false
}

// cutPost leaves under the nearest common ancestor of p's headline and its
// last block only what lies between the two (the headline left out) and
// returns that ancestor. It changes the tree p was found in.
func cutPost(p *post) *html.Node {
	top := p.head.Parent
	for top != nil && !contains(top, p.last) {
		top = top.Parent
	}
	if top == nil {
		return nil
	}
	for n := p.head; n != top; n = n.Parent {
		for s := n.Parent.FirstChild; s != nil && s != n; {
			next := s.NextSibling
			n.Parent.RemoveChild(s)
			s = next
		}
	}
	p.head.Parent.RemoveChild(p.head)
	for _, d := range p.drop {
		if d.Parent != nil && contains(top, d) {
			d.Parent.RemoveChild(d)
		}
	}
	for n := p.last; n != top; n = n.Parent {
		for s := n.NextSibling; s != nil; {
			next := s.NextSibling
			n.Parent.RemoveChild(s)
			s = next
		}
	}
	return top
}

// holdsPost reports whether the main text the reader picked is the post
// under the headline or may be: most of its text, located line by line in
// the page's blocks, lies after the headline, in the headline's column and
// in no block that ends a post or stands beside it. A pick mostly before
// the headline (an edition menu), to the side of its column (a side bar,
// a profile box) or in an author box or the responses is not the post. A
// pick none of whose lines is found stands.
func holdsPost(text string, p *post) bool {
	// Every block's letters and digits in one string: a line is found
	// with one search, not one per block.
	var all strings.Builder
	ends := make([]int, len(p.leaves))
	for i, l := range p.leaves {
		all.WriteString(l.norm)
		all.WriteByte(0)
		ends[i] = all.Len()
	}
	norms := all.String()
	find := firstIndex(norms, strings.Count(text, "\n")+1)
	col := boxOf(p.head)
	in, out := 0, 0
	for _, line := range strings.Split(text, "\n") {
		k := []rune(alnum(line))
		if len(k) < 20 {
			continue
		}
		at := find(string(k[:min(len(k), postKeyChars)]))
		if at < 0 {
			continue
		}
		i := sort.SearchInts(ends, at+1)
		l := p.leaves[i]
		if i < p.start || !col.overlaps(l.box) || p.endsPost(l.n) || p.postAside(l) != nil {
			out += len(k)
		} else {
			in += len(k)
		}
	}
	return out <= in || out > postOutMax
}

// postOutMax is the most text of a pick that lies outside the post under
// the headline for the post to be taken instead: boilerplate blocks are
// shorter (an author box, a profile, an edition menu), and a pick longer
// than this is an article whose headline is elsewhere (a recipe card's
// title at the foot of its blog post).
const postOutMax = 2000

// postText returns the written post under the headline of pg, cleaned as
// the main content is, or "" when it is shorter than postMin or cleaning
// left under half of its text (its paragraphs were named as chrome).
func postText(pg Page, base *url.URL) (string, error) {
	doc, err := html.Parse(strings.NewReader(pg.HTML))
	if err != nil {
		return "", fmt.Errorf("parse the page: %w", err)
	}
	unwrapForms(doc)
	markWidgets(doc)
	body := findBody(doc)
	if body == nil {
		return "", nil
	}
	p := findPost(doc, body, pg.Title)
	if p == nil {
		return "", nil
	}
	top := cutPost(p)
	if top == nil {
		return "", nil
	}
	text := written(top, pg.Title, base)
	if n := utf8.RuneCountInString(text); n < postMin || 2*n < p.prose {
		return "", nil // cleaning left little of it: not a post to trust
	}
	return text, nil
}

// ownText returns n's own inline text, its blocks left out.
func ownText(n *html.Node) string {
	var b strings.Builder
	var inline func(m *html.Node)
	inline = func(m *html.Node) {
		for c := m.FirstChild; c != nil; c = c.NextSibling {
			switch c.Type {
			case html.TextNode:
				b.WriteString(c.Data)
			case html.ElementNode:
				if skipped[c.DataAtom] || hidden(c) || blocks[c.DataAtom] || attr(c, attrBox) != "" {
					continue
				}
				inline(c)
			}
		}
	}
	inline(n)
	return oneLine(b.String())
}

// scanBudget is how many bytes holdsPost may scan with strings.Index (one
// search per line, each over every block's text) before it indexes the
// text instead: a hostile page of many short paragraphs made that search
// quadratic (16,000 paragraphs, 1.4 MB: 3.7 s of the guard's CPU, and the
// snapshot allows 4 Mi units).
const scanBudget = 64 << 20

// firstIndex returns a function that finds the first occurrence of a key
// in s, as strings.Index does: for up to lines searches that stay within
// scanBudget, strings.Index itself; beyond it a suffix array of s, with
// each distinct key looked up once (every occurrence of a key is visited
// once, so the work stays linear in s for each key length).
func firstIndex(s string, lines int) func(key string) int {
	if lines*len(s) <= scanBudget {
		return func(key string) int { return strings.Index(s, key) }
	}
	sa := suffixarray.New([]byte(s))
	first := map[string]int{}
	return func(key string) int {
		if at, ok := first[key]; ok {
			return at
		}
		at := -1
		for _, i := range sa.Lookup([]byte(key), -1) {
			if at < 0 || i < at {
				at = i
			}
		}
		first[key] = at
		return at
	}
}
