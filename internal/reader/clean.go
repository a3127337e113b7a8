package reader

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The renderer's attributes js/read.js writes on every rendered element that
// is not inline (the page's own attributes of these names are dropped).
const (
	attrBox      = "data-cdpguard-box"
	attrFontSize = "data-cdpguard-fs"
)

// boilerName matches class and id words of blocks that are not the
// article's text: captions and credits, bylines and dates, share bars,
// newsletter and subscription boxes, related and promoted links, tags.
var boilerName = regexp.MustCompile(`caption|credit|byline|by-line|author|share|sharing|social|newsletter|subscri|related|promo|recommend|(^|[^a-z])tags?([^a-z]|$)|breadcrumb|timestamp|dateline|published|sponsor|advert|(^|[^a-z])ads?([^a-z]|$)|comment|signup|sign-up|toolbar|follow|disclaimer|copyright|topics|read-?more|more-?stories`)

// adName matches the class and id words of advertising slots.
var adName = regexp.MustCompile(`sponsor|advert|(^|[^a-z])ads?([^a-z]|$)`)

// adOnlyName reports whether name is chrome only by its advertising words:
// a layout wrapper such as "section-and-ad" holds the article's paragraph
// beside an ad slot, and an ad holds no prose of its own (holdsProse).
func adOnlyName(name string) bool {
	return adName.MatchString(name) && !boilerName.MatchString(adName.ReplaceAllString(name, " "))
}

// holdsProse reports whether n has a block of running text under it: a
// block whose own text is proseMin characters or more, under proseLinks
// of them in links.
func holdsProse(n *html.Node) bool {
	_, prose, _ := proseCluster(n)
	return prose >= proseMin
}

// captionName matches the class and id words of captions and credits.
var captionName = regexp.MustCompile(`caption|credit`)

// boilerText matches the text of short blocks that speak to the reader
// about the site rather than the story.
var boilerText = regexp.MustCompile(`(?i)\b(subscribe (to|now|here|for)|newsletter|sign up (for|to|now|here)|follow (us|her|him|them|me)|all rights reserved|click here|share this|have a tip|get the latest|read more)\b|^related:|©|copyright`)

// shortChrome matches short blocks that are not the story: bylines,
// datelines, photo credits and captions, tool bars, "Advertisement".
var shortChrome = regexp.MustCompile(`(?i)^(by|by:|from|posted|posted:|published|published:|updated|updated:|last updated|written by|article from|advertisement|story tools|send this article|printer.friendly|email (this|to a friend)|previous page|next page)\b|\b(file photo|photo:|photo by|photograph:|pictured|/reuters|/ap\b|getty images|afp photo|ap photo|seen here|click to enlarge|view larger image)\b|^[^\pL]*$`)

// label matches blocks that are a single word or two of site interface.
var label = regexp.MustCompile(`(?i)^(sign in|log in|sign up|comments?|\d+ comments?|close|caption|advert|advertisement|latest:?|on the net:?|don'?t miss|font size.*|text size.*|staff and agencies|share|share this|print|e-?mail|more|related|menu|media playback is unsupported on your device|more great wired stories|want more\?.*|skip to (main )?content|learn more|read more|(the )?associated press|you may also like:?)$`)

// sourceLine matches a line that only names the story's source: "Source:
// ITN", "- Reuters", "(Agencies)".
var sourceLine = regexp.MustCompile(`(?i)^(sources?:.*|[(\[]?\s*(reuters|ap|afp|aap|agencies|pa|ani|pti|ians|upi|dpa|xinhua|cnn|bbc|itn)\s*[)\]]?)$`)

// contactLine matches short credit lines: "AP Sports Writer", an e-mail
// address, "Photo: …".
var contactLine = regexp.MustCompile(`(?i)\b(ap|staff|sports|business|auto) [a-z ]*writer\b|[a-z0-9._-]+@[a-z0-9.-]+\.[a-z]{2,}|\bphoto\s*[:/]|\b(reporting|additional reporting|editing) by\b|provided by (afp|ap|reuters)|the full article contains|contributed to this report`)

// commentsName matches the class or id of a comments section, left out
// whatever its size.
var commentsName = regexp.MustCompile(`(^|\s)(comments?|comment-?list|comments-?area|comment-?section|user-?comments|disqus_thread|respond)(\s|$)`)

// dateWords are the words a dateline is made of.
var dateWords = regexp.MustCompile(`(?i)\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?|\b(mon|tue|wed|thu|fri|sat|sun)[a-z]*\b|\b(am|pm|gmt|utc|[ecmp][sd]t|edt|bst|ist|aest|aedt|posted|updated|published|last|on|at|ago|minutes?|hours?|days?)\b|[0-9]+`)

// chromeLine reports whether the short text t of a block is a byline, a
// dateline, a credit or a tool bar.
func chromeLine(t string) bool {
	if l := newLine(t); l.shortChrome() || l.label() || l.contactLine() {
		return true
	}
	if dateOnly(t) {
		return true
	}
	if parts := strings.Split(t, "|"); len(parts) >= 3 && len(t)/len(parts) < 25 {
		return true // E-MAIL | PRINT | FEEDBACK
	}
	return false
}

// dateOnly reports whether t is a date and time and nothing else.
// A line with a word no date is made of is turned away before the
// regexp (keepsWord).
func dateOnly(t string) bool {
	if !foldRisk(t) && keepsWord(lowerASCII(t)) {
		return false
	}
	return len(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) {
			return r
		}
		return ' '
	}, dateWords.ReplaceAllString(t, "")))) == 0
}

// Cleaning bounds, in characters of text.
const (
	boilerMax     = 500  // a block named as chrome is left out below this
	boilerTextMax = 250  // a block whose text is chrome is left out below this
	linkyMax      = 1000 // a link list is left out below this
	smallMax      = 300  // a small-print block is left out below this
	chromeLineMax = 120  // a byline, dateline or credit is shorter
)

// authorBoxName matches the names of an author box or profile: the
// prose about the writer under (or beside) a post, which can be longer
// than a short post.
var authorBoxName = regexp.MustCompile(`author-?(box|bio|info|profile|card|details|block)|about-?(the-?)?author|(^|[^a-z])bio([^a-z]|$)|profile`)

// authorBoxMax is the text under which a block named as an author box is
// left out.
const authorBoxMax = 1500

// linkyShare is the share of a block's text in links above which it is a
// link list (related stories, tags), not prose.
const linkyShare = 0.8

// clean removes from the main content what a human reader does not count
// as the article: captions, link lists (related stories, tags, share
// bars), blocks named or worded as site chrome, small print (a font
// clearly smaller than the article's, where bylines, dates and credits
// sit), and the headline when it repeats the title (the reader's header
// carries the title).
//
// A listing (a shop's results) keeps its cards, linked names and all: it
// reports whether root is one (see listing).
func clean(root *html.Node, title string) (cards bool) {
	cards = listing(root)
	dominant := dominantFontSize(root)
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			if c.Type == html.ElementNode && boilerplate(c, dominant, cards) {
				n.RemoveChild(c)
			} else if c.Type == html.ElementNode {
				walk(c)
			}
			c = next
		}
	}
	dropRelatedSections(root) // first: a wrapper the walk empties would widen a section
	markDirectories(root)
	walk(root)
	dropHeadline(root, title)
	return cards
}

// boilerplate reports whether the element n is chrome inside the main
// content.
func boilerplate(n *html.Node, dominant float64, cards bool) bool {
	if inDirectory(n) {
		return false // a list of whom to write to (markDirectories)
	}
	if isWidget(n) {
		return true // "Share this article?" over its icons, a picture's caption (markWidgets)
	}
	switch n.DataAtom {
	case atom.Figcaption:
		return true
	case atom.Html, atom.Body, atom.Article, atom.Main, atom.Tr, atom.Td, atom.Th, atom.Tbody, atom.Thead:
		return false
	}
	if !blocks[n.DataAtom] && attr(n, attrBox) == "" {
		// inline: a link or an emphasis inside a sentence, unless named
		// as a caption or a credit ("<span class=newsCaption>")
		if n.DataAtom == atom.A || !captionName.MatchString(strings.ToLower(attr(n, "class")+" "+attr(n, "id"))) {
			return false
		}
		text, _ := textAndLinkLen(n)
		return text > 0 && text < smallMax
	}
	text, links := textAndLinkLen(n)
	if text == 0 {
		return false
	}
	if !cards && text < linkyMax && float64(links) > linkyShare*float64(text) && !proseBlock[n.DataAtom] {
		return true
	}
	if !cards && teaserBlock(n) {
		return true // other stories: a linked title, a line of summary
	}
	name := strings.ToLower(attr(n, "class") + " " + attr(n, "id"))
	if commentsName.MatchString(name) {
		return true
	}
	if text < boilerMax && boilerName.MatchString(name) && !(adOnlyName(name) && holdsProse(n)) {
		return true
	}
	if text < authorBoxMax && authorBoxName.MatchString(name) {
		return true // an author box or profile, however long its prose
	}
	if text < 2*boilerTextMax && isPostAsideText(ownText(n)) {
		return true // a blog's footer under its post ("leave a response")
	}
	if text < boilerTextMax {
		t := innerText(n)
		if isBoilerText(t) || isSeeAlso(t) || (text < chromeLineMax && chromeLine(t)) {
			return true
		}
	}
	if inTable(n) {
		return false // data cells are often set smaller than prose
	}
	if fs := fontSize(n); dominant > 0 && fs > 0 && fs < 0.85*dominant && text < smallMax && attr(n, attrBox) != "" && headingLevel(n) == 0 {
		return true
	}
	return false
}

// dropHeadline removes the first h1 (or, with none, a first heading) whose
// text is the page title or part of it.
func dropHeadline(root *html.Node, title string) {
	title = strings.ToLower(oneLine(title))
	if title == "" {
		return
	}
	var found *html.Node
	var find func(*html.Node)
	find = func(n *html.Node) {
		for c := n.FirstChild; c != nil && found == nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if c.DataAtom == atom.H1 || c.DataAtom == atom.H2 {
				h := strings.ToLower(oneLine(innerText(c)))
				if h != "" && strings.Contains(title, h) {
					found = c
				}
				continue
			}
			find(c)
		}
	}
	find(root)
	if found != nil && found.Parent != nil {
		found.Parent.RemoveChild(found)
	}
}

// dominantFontSize returns the font size carrying the most text under
// root (0 when the page had no renderer attributes).
func dominantFontSize(root *html.Node) float64 {
	chars := map[float64]int{}
	var walk func(n *html.Node, fs float64)
	walk = func(n *html.Node, fs float64) {
		if n.Type == html.ElementNode {
			if skipped[n.DataAtom] {
				return
			}
			if v, err := strconv.ParseFloat(attr(n, attrFontSize), 64); err == nil {
				fs = v
			}
		}
		if n.Type == html.TextNode && fs > 0 {
			chars[fs] += len(strings.TrimSpace(n.Data))
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, fs)
		}
	}
	walk(root, 0)
	best, most := 0.0, 0
	for fs, n := range chars {
		if n > most || (n == most && fs > best) {
			best, most = fs, n
		}
	}
	return best
}

// fontSize is the renderer's font size of n or its nearest annotated
// ancestor.
func fontSize(n *html.Node) float64 {
	for ; n != nil; n = n.Parent {
		if n.Type == html.ElementNode {
			if v, err := strconv.ParseFloat(attr(n, attrFontSize), 64); err == nil {
				return v
			}
		}
	}
	return 0
}

// textAndLinkLen returns the characters of text under n and of those
// inside links, whitespace collapsed, left-out elements not counted.
func textAndLinkLen(n *html.Node) (text, links int) {
	var walk func(n *html.Node, inLink bool)
	walk = func(n *html.Node, inLink bool) {
		switch n.Type {
		case html.TextNode:
			k := utf8.RuneCountInString(strings.Join(strings.Fields(n.Data), " "))
			text += k
			if inLink {
				links += k
			}
			return
		case html.ElementNode:
			if skipped[n.DataAtom] || hidden(n) {
				return
			}
			inLink = inLink || n.DataAtom == atom.A
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inLink)
		}
	}
	walk(n, false)
	return text, links
}

// innerText returns the text under n, whitespace collapsed.
func innerText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
			return
		}
		if n.Type == html.ElementNode && (skipped[n.DataAtom] || hidden(n)) {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return oneLine(b.String())
}

// inTable reports whether n is a table or inside one.
func inTable(n *html.Node) bool {
	for ; n != nil; n = n.Parent {
		if n.DataAtom == atom.Table {
			return true
		}
	}
	return false
}

// proseBlock are blocks a link list is not made of: a paragraph, a list
// item or a heading that is a link is the article's own.
var proseBlock = map[atom.Atom]bool{
	atom.P: true, atom.Li: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Blockquote: true,
}

// dropChromeLines removes the lines of text that are chrome on their own:
// a byline or dateline written inline beside other text in one block
// ("Article from: AFP<br>…") is a line of its own only once written.
// Table rows and headings are kept.
func dropChromeLines(text string) string {
	lines := strings.Split(text, "\n")
	out := lines[:0]
	for _, l := range lines {
		if l == "" || l[0] == ' ' || strings.HasPrefix(l, "#") || strings.Contains(l, " | ") {
			out = append(out, l) // preformatted, a heading, a table row
			continue
		}
		t := strings.TrimSpace(strings.TrimLeft(dropURLNotes(l), "-•* "))
		if t == "" || len(t) >= chromeLineMax {
			out = append(out, l)
			continue
		}
		if c := newLine(t); c.shortChrome() || c.label() || c.sourceLine() || dateOnly(t) {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
