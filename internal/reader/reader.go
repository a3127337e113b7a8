// Package reader turns the rendered HTML of a page into the text an agent
// reads: the main content (picked by a Readability port), written out as
// plain text with headings, list items and table rows kept readable, chrome
// left out, and links to other hosts annotated with their URL. It also cuts
// that text into sections.
package reader

import (
	"fmt"
	"net/url"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// minMainChars is the least main-content text the extractor must find for
// it to be used; below it the whole body is written (a search result page,
// a short form page), chrome left out.
const minMainChars = 200

// Page is a rendered page as the guard read it from the browser.
type Page struct {
	URL   string // the final URL (location.href)
	Title string // document.title
	HTML  string // the rendered DOM serialised
}

// Extract returns the readable body text of p: its main content, or its
// whole body when no main content stands out. The title and URL are not
// part of it (see Compose).
func Extract(p Page) (string, error) {
	base, err := url.Parse(p.URL)
	if err != nil {
		base = nil
	}
	doc, err := html.Parse(strings.NewReader(p.HTML))
	if err != nil {
		return "", fmt.Errorf("parse the page: %w", err)
	}
	// The reader's own candidate first: the parser below mutates its tree.
	fresh, err := html.Parse(strings.NewReader(p.HTML))
	if err != nil {
		return "", fmt.Errorf("parse the page: %w", err)
	}
	unwrapForms(doc)
	unwrapForms(fresh)
	markWidgets(doc)
	captions := markWidgets(fresh)
	body := findBody(fresh)
	var cluster *html.Node
	var under *post
	clusterProse := 0
	if body != nil {
		cluster, clusterProse, _ = proseCluster(body)
		under = findPost(fresh, body, p.Title)
	}
	// headlineFirst returns text, or the post under the page's headline
	// when text lies elsewhere: a short post loses on prose to the author
	// box or the responses under it, which hold no part of it.
	headlineFirst := func(text string) (string, error) {
		if under == nil || holdsPost(text, under) {
			return text, nil
		}
		if alt, err := postText(p, base); err != nil || alt != "" {
			return alt, err
		}
		return text, nil
	}
	parser := readability.NewParser()
	parser.DisableJSONLD = true
	// The class names stay on the port's pick: the cleaning reads them
	// (captions, bylines, comments, share bars).
	parser.KeepClasses = true
	if art, err := parser.ParseAndMutate(doc, base); err == nil && art.Node != nil {
		// The port's pick stands unless it holds under half the prose of
		// the reader's own: then it took a side box for the article.
		markAgain(art.Node, captions)
		if _, _, prose := proseCluster(art.Node); cluster == nil || float64(prose) >= clusterShare*float64(clusterProse) || prose >= clusterMinProse || teaserList(cluster) {
			main := narrow(art.Node)
			if text := written(main, p.Title, base); len(text) >= minMainChars {
				return headlineFirst(text)
			}
		}
	}
	if cluster != nil {
		if text := written(cluster, p.Title, base); len(text) >= minMainChars {
			return headlineFirst(text)
		}
	}
	// A post under the page's headline, too short to stand out.
	if under != nil {
		if alt, err := postText(p, base); err != nil || alt != "" {
			return alt, err
		}
	}
	// No main content stands out: the whole body, chrome left out.
	if fresh, err = html.Parse(strings.NewReader(p.HTML)); err != nil {
		return "", fmt.Errorf("parse the page: %w", err)
	}
	if body = findBody(fresh); body == nil {
		return "", nil
	}
	unwrapForms(fresh)
	markWidgets(fresh)
	dropWidgets(fresh)
	return writeText(body, base, true), nil
}

// written cleans the main content n and writes it, chrome lines left
// out; a listing's lines without letters (its prices) stay.
func written(n *html.Node, title string, base *url.URL) string {
	if clean(n, title) {
		return writeText(n, base, false)
	}
	return dropChromeLines(writeText(n, base, false))
}

// narrow returns the prose cluster under n when it holds nearly all of
// n's prose (narrowKeep of it), else n: the port often picks a table row
// or a column whose other cells are menus, teasers and promotions.
func narrow(n *html.Node) *html.Node {
	sub, subProse, prose := proseCluster(n)
	if sub == nil || proseBlock[sub.DataAtom] || float64(subProse) < narrowKeep*float64(prose) {
		return n // a single paragraph: what is around it (a list, a table) is the page's too
	}
	return sub
}

// narrowKeep is the least share of the pick's prose narrow keeps. Measured
// on the tuning pages: 0.7 to 0.9 score alike, 0.5 loses article parts.
const narrowKeep = 0.9

// unwrapForms turns a form that holds the page's text into a div: ASP.NET
// pages put the whole body in one form, and forms are otherwise skipped
// as controls. A form is the page's when it holds formTextMin characters
// of text, under half of them in links.
func unwrapForms(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type != html.ElementNode {
			continue
		}
		if c.DataAtom == atom.Form {
			if text, links := textAndLinkLen(formAsDiv(c)); text >= formTextMin && links*2 < text {
				continue // now a div; its inner forms are looked at too
			}
			c.DataAtom, c.Data = atom.Form, "form"
			continue
		}
		unwrapForms(c)
	}
}

// formAsDiv renames the form n to a div, unwraps the forms inside it and
// returns it.
func formAsDiv(n *html.Node) *html.Node {
	n.DataAtom, n.Data = atom.Div, "div"
	unwrapForms(n)
	return n
}

// formTextMin is the text from which a form is the page's own.
const formTextMin = 1000

// clusterShare is the least share of the prose cluster's prose the
// Readability port's pick must hold to be used.
const clusterShare = 0.3

// clusterMinProse is the port's prose from which its pick stands anyway:
// long prose is an article, and a larger cluster then holds teasers too.
const clusterMinProse = 1500

// Compose puts the title, the URL and any notes on top of the body text.
func Compose(pageURL, title string, notes []string, body string) string {
	var b strings.Builder
	if title = strings.TrimSpace(title); title != "" {
		b.WriteString("Title: " + oneLine(title) + "\n")
	}
	b.WriteString("URL: " + pageURL + "\n")
	for _, n := range notes {
		b.WriteString("Note: " + n + "\n")
	}
	b.WriteString("\n")
	b.WriteString(body)
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func findBody(n *html.Node) *html.Node {
	if n.Type == html.ElementNode && n.Data == "body" {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if b := findBody(c); b != nil {
			return b
		}
	}
	return nil
}

// ExtractReadability is the reader before issue 23: the Readability port's
// main content alone, written by our writer, or "" when it found none. The
// evaluation (e2e/bench/readereval) scores it as a candidate.
func ExtractReadability(p Page) (string, error) {
	base, err := url.Parse(p.URL)
	if err != nil {
		base = nil
	}
	doc, err := html.Parse(strings.NewReader(p.HTML))
	if err != nil {
		return "", fmt.Errorf("parse the page: %w", err)
	}
	parser := readability.NewParser()
	parser.DisableJSONLD = true
	art, err := parser.ParseAndMutate(doc, base)
	if err != nil || art.Node == nil {
		return "", nil
	}
	return writeText(art.Node, base, false), nil
}
