package reader

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// skipped are elements whose content is chrome, code or controls, never
// text an agent reads: navigation, forms and their controls, scripts,
// embedded objects.
var skipped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Nav: true, atom.Form: true, atom.Button: true, atom.Select: true,
	atom.Option: true, atom.Input: true, atom.Textarea: true, atom.Svg: true,
	atom.Math: true, atom.Canvas: true, atom.Iframe: true, atom.Object: true,
	atom.Embed: true, atom.Dialog: true, atom.Head: true, atom.Img: true,
	atom.Picture: true, atom.Video: true, atom.Audio: true, atom.Map: true,
}

// pageChrome are elements left out when the writer works on a whole body
// (no main content was found): site headers, footers and side bars.
var pageChrome = map[atom.Atom]bool{
	atom.Header: true, atom.Footer: true, atom.Aside: true,
}

// blocks start and end on a line of their own.
var blocks = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Aside: true, atom.Blockquote: true,
	atom.Body: true, atom.Dd: true, atom.Details: true, atom.Div: true, atom.Dl: true,
	atom.Dt: true, atom.Fieldset: true, atom.Figcaption: true, atom.Figure: true,
	atom.Footer: true, atom.Header: true, atom.Hr: true, atom.Li: true, atom.Main: true,
	atom.Ol: true, atom.P: true, atom.Pre: true, atom.Section: true, atom.Summary: true,
	atom.Table: true, atom.Tr: true, atom.Ul: true, atom.Caption: true, atom.Html: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

// paragraphs are blocks followed by an empty line.
var paragraphs = map[atom.Atom]bool{
	atom.P: true, atom.Blockquote: true, atom.Pre: true, atom.Table: true, atom.Figure: true,
	atom.Ul: true, atom.Ol: true, atom.Dl: true, atom.Section: true, atom.Article: true,
	atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true, atom.H6: true,
}

// textWriter writes the readable text of a node tree: headings as "#"
// lines, list items as "- " or "1. " lines, table rows as cells joined by
// " | ", links to other hosts as "text <url>".
type textWriter struct {
	b        strings.Builder
	base     *url.URL // resolves relative links
	host     string   // the page's host name: links to it are written as text only
	wholeDoc bool     // no main content was found: leave site chrome out too

	newlines int  // line breaks owed before the next text
	space    bool // a space is owed before the next text
	pre      int  // depth inside <pre>
	cell     int  // depth inside a table cell: blocks become spaces
	lists    []int
	pending  []string // link URLs owed at the end of the current word
}

// writeText returns the readable text of n. base is the page's URL.
func writeText(n *html.Node, base *url.URL, wholeDoc bool) string {
	w := &textWriter{base: base, wholeDoc: wholeDoc}
	if base != nil {
		w.host = strings.ToLower(base.Hostname())
	}
	w.node(n)
	w.annotate()
	return strings.TrimRightFunc(w.b.String(), unicode.IsSpace)
}

func (w *textWriter) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.DocumentNode:
		w.children(n)
		return
	case html.ElementNode:
	default:
		return
	}
	if skipped[n.DataAtom] || (w.wholeDoc && pageChrome[n.DataAtom]) || hidden(n) {
		return
	}
	switch n.DataAtom {
	case atom.Br:
		w.breakLine(1)
		return
	case atom.Hr:
		w.breakLine(2)
		return
	case atom.A:
		w.link(n)
		return
	case atom.Td, atom.Th:
		if prevElement(n) != nil {
			w.space = false
			w.inline(" | ")
		}
		w.cell++
		w.children(n)
		w.cell--
		return
	case atom.Li:
		w.item(n)
		return
	case atom.Ul, atom.Ol:
		gap := 2
		if len(w.lists) > 0 {
			gap = 1 // a nested list stays with its item
		}
		w.lists = append(w.lists, 0)
		if n.DataAtom == atom.Ol {
			w.lists[len(w.lists)-1] = 1
			if s, err := strconv.Atoi(attr(n, "start")); err == nil {
				w.lists[len(w.lists)-1] = s
			}
		}
		w.block(n, gap)
		w.lists = w.lists[:len(w.lists)-1]
		return
	case atom.Pre:
		w.pre++
		w.block(n, 2)
		w.pre--
		return
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		if w.cell > 0 {
			w.children(n)
			return
		}
		w.breakLine(2)
		w.inline(strings.Repeat("#", int(n.Data[1]-'0')) + " ")
		w.children(n)
		w.breakLine(2)
		return
	}
	if blocks[n.DataAtom] {
		gap := 1
		if paragraphs[n.DataAtom] {
			gap = 2
		}
		w.block(n, gap)
		return
	}
	w.children(n)
}

func (w *textWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
}

// block writes n on lines of its own, gap line breaks before and after.
func (w *textWriter) block(n *html.Node, gap int) {
	w.breakLine(gap)
	w.children(n)
	w.breakLine(gap)
}

// item writes a list item, numbered inside <ol>.
func (w *textWriter) item(n *html.Node) {
	if w.cell > 0 {
		w.space = true
		w.children(n)
		return
	}
	w.breakLine(1)
	depth := len(w.lists)
	marker := "- "
	if depth > 0 && w.lists[depth-1] > 0 {
		marker = strconv.Itoa(w.lists[depth-1]) + ". "
		w.lists[depth-1]++
	}
	if depth > 1 {
		marker = strings.Repeat("  ", depth-1) + marker
	}
	w.inline(marker)
	w.children(n)
	w.breakLine(1)
}

// link writes a link's text, followed by " <url>" when it points to
// another host. The note waits for the end of the word: a link that ends
// inside a word ("<a>Arte</a>mis") must not split it.
func (w *textWriter) link(n *html.Node) {
	before := w.b.Len()
	w.children(n)
	if w.b.Len() == before {
		return // no text (an image link): nothing to annotate
	}
	if u := w.external(attr(n, "href")); u != "" && (len(w.pending) == 0 || w.pending[len(w.pending)-1] != u) {
		w.pending = append(w.pending, u)
	}
}

// annotate writes the link notes owed, at a word's end.
func (w *textWriter) annotate() {
	for _, u := range w.pending {
		w.b.WriteString(" <" + u + ">")
	}
	w.pending = w.pending[:0]
}

// external returns href resolved against the page when it is an http(s)
// URL on another host, else "".
func (w *textWriter) external(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || href[0] == '#' {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if w.base != nil {
		u = w.base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return ""
	}
	if sameSite(u.Hostname(), w.host) {
		return ""
	}
	return u.String()
}

// breakLine owes n line breaks (at most two: one empty line).
func (w *textWriter) breakLine(n int) {
	if w.cell > 0 {
		w.space = true
		return
	}
	w.newlines = max(w.newlines, n)
}

// inline writes s as is, after the owed breaks and link notes.
func (w *textWriter) inline(s string) {
	w.flush()
	w.annotate()
	w.b.WriteString(s)
}

func (w *textWriter) flush() {
	if w.b.Len() == 0 {
		w.newlines, w.space = 0, false
		return
	}
	if w.newlines > 0 || w.space {
		w.annotate()
	}
	if w.newlines > 0 {
		w.b.WriteString("\n\n"[:min(w.newlines, 2)])
	} else if w.space {
		w.b.WriteByte(' ')
	}
	w.newlines, w.space = 0, false
}

// text writes a text node, whitespace collapsed outside <pre>.
func (w *textWriter) text(s string) {
	if w.pre > 0 {
		if s != "" {
			w.inline(s)
		}
		return
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		if s != "" {
			w.space = true
		}
		return
	}
	r, _ := utf8.DecodeRuneInString(s)
	if unicode.IsSpace(r) {
		w.space = true
	}
	if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.IsMark(r) {
		w.annotate() // the link's word ended with it
	}
	w.flush()
	if len(w.pending) > 0 { // the first field ends the word a link left open
		w.b.WriteString(fields[0])
		w.annotate()
		if fields = fields[1:]; len(fields) > 0 {
			w.b.WriteByte(' ')
		}
	}
	w.b.WriteString(strings.Join(fields, " "))
	if r, _ := utf8.DecodeLastRuneInString(s); unicode.IsSpace(r) {
		w.space = true
	}
}

// hidden reports elements a reader of the page does not see.
func hidden(n *html.Node) bool {
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if a.Val == "true" {
				return true
			}
		case "style":
			s := strings.ReplaceAll(strings.ToLower(a.Val), " ", "")
			if strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden") {
				return true
			}
		}
	}
	return false
}

func prevElement(n *html.Node) *html.Node {
	for p := n.PrevSibling; p != nil; p = p.PrevSibling {
		if p.Type == html.ElementNode {
			return p
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// sameSite reports whether host is the page's host, a "www." prefix aside
// (www.example.com and example.com are one site to a reader).
func sameSite(host, page string) bool {
	host = strings.TrimPrefix(strings.ToLower(host), "www.")
	return host == strings.TrimPrefix(page, "www.")
}
