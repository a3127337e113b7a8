// Package readeval scores the reader against human-made ground truth of
// public labelled corpora: it loads the corpora (fetched by
// scripts/reader-corpora.sh, never committed), splits off a held-out third
// by a fixed hash of each page id, and scores extracted text with the
// metric of the Article Extraction Benchmark (word 4-shingles; single words
// too), with a bootstrap error.
package readeval

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/net/html"
)

// Page is one labelled page: its HTML as crawled and the text a human
// marked as its article body.
type Page struct {
	Corpus string // "aeb", "l3s", "big9", "chaos", "cpe" or "traf"
	ID     string // the corpus's own page id
	HTML   []byte // the crawled bytes, encoding as crawled
	Truth  string // the human-labelled article body
	// With and Without are the snippets a human chose that the main text
	// must and must not contain, for a corpus labelled by snippets (traf);
	// nil for a corpus with the whole body labelled.
	With, Without []string
}

// ErrNoCorpus is returned when a corpus directory is missing.
var ErrNoCorpus = errors.New("readeval: corpus not found (run scripts/reader-corpora.sh)")

// Load reads every corpus under root (root/aeb, root/l3s, root/utomo,
// root/cpe, root/traf), sorted by corpus and id. The AEB and L3S-GN1 are
// required; a later corpus whose directory is missing is left out (a
// directory filled before issue 35).
func Load(root string) ([]Page, error) {
	aeb, err := LoadAEB(filepath.Join(root, "aeb"))
	if err != nil {
		return nil, err
	}
	l3s, err := LoadL3S(filepath.Join(root, "l3s"))
	if err != nil {
		return nil, err
	}
	pages := append(aeb, l3s...)
	for _, c := range []struct {
		dir  string
		load func(string) ([]Page, error)
	}{{"utomo", LoadUtomo}, {"cpe", LoadCleanPortalEval}, {"traf", LoadTrafilatura}} {
		dir := filepath.Join(root, c.dir)
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		more, err := c.load(dir)
		if err != nil {
			return nil, err
		}
		pages = append(pages, more...)
	}
	return pages, nil
}

// LoadAEB reads the Article Extraction Benchmark (scrapinghub, MIT):
// html/<id>.html.gz and ground-truth.json's articleBody.
func LoadAEB(dir string) ([]Page, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "ground-truth.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCorpus, err)
	}
	var truth map[string]struct {
		ArticleBody string `json:"articleBody"`
	}
	if err := json.Unmarshal(raw, &truth); err != nil {
		return nil, fmt.Errorf("readeval: aeb ground truth: %w", err)
	}
	var pages []Page
	for id, t := range truth {
		b, err := readGzip(filepath.Join(dir, "html", id+".html.gz"))
		if err != nil {
			return nil, fmt.Errorf("readeval: aeb page %s: %w", id, err)
		}
		pages = append(pages, Page{Corpus: "aeb", ID: id, HTML: b, Truth: t.ArticleBody})
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].ID < pages[j].ID })
	return pages, nil
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(z, 64<<20))
}

// LoadL3S reads L3S-GN1 (Kohlschütter et al., research use only): the
// crawled page original/<id>.html and, as truth, the text the assessors
// labelled "fulltext" (class x-nc-sel2) in annotated/<id>.html. Headline
// (sel1), supplemental text such as captions (sel3), related links (sel4)
// and comments (sel5) are not the article body, as in the AEB's
// articleBody. Pages with no fulltext label are left out.
func LoadL3S(dir string) ([]Page, error) {
	names, err := filepath.Glob(filepath.Join(dir, "original", "*.html"))
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoCorpus, dir)
	}
	sort.Strings(names)
	var pages []Page
	for _, name := range names {
		id := strings.TrimSuffix(filepath.Base(name), ".html")
		orig, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ann, err := os.ReadFile(filepath.Join(dir, "annotated", id+".html"))
		if err != nil {
			return nil, err
		}
		truth, err := labelled(ann, "x-nc-sel2")
		if err != nil {
			return nil, fmt.Errorf("readeval: l3s page %s: %w", id, err)
		}
		if strings.TrimSpace(truth) == "" {
			continue
		}
		pages = append(pages, Page{Corpus: "l3s", ID: id, HTML: orig, Truth: truth})
	}
	return pages, nil
}

// labelled returns the text inside elements of class cls, blocks joined by
// line breaks.
func labelled(doc []byte, cls string) (string, error) {
	n, err := html.Parse(bytes.NewReader(doc))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var text func(*html.Node)
	text = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			text(c)
		}
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "span" {
			for _, a := range n.Attr {
				if a.Key == "class" && a.Val == cls {
					text(n)
					b.WriteByte('\n')
					return
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String(), nil
}

// BodyText returns the text of the body of a rendered DOM, scripts and
// styles left out. The head is not on the page: a crawl cut inside
// <title> holds the whole page there, as the title's text, and renders
// nothing, so that such a page counts as broken (see readereval).
func BodyText(dom string) (string, error) {
	n, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var walk func(n *html.Node, inBody bool)
	walk = func(n *html.Node, inBody bool) {
		switch {
		case n.Type == html.TextNode && inBody:
			b.WriteString(n.Data)
			b.WriteByte(' ')
		case n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style" || n.Data == "head"):
			return
		}
		inBody = inBody || (n.Type == html.ElementNode && n.Data == "body")
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, inBody)
		}
	}
	walk(n, false)
	return b.String(), nil
}
