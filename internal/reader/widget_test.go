package reader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtractLeavesOutWidgets reads a synthetic rendered article (boxes
// and font sizes as js/read.js writes them) that ends in the kinds of
// chrome trafilatura's tuning pages kept in the text, in the languages
// they were written in: a "see also" line pointing to another story, a
// share prompt over a row of icon links, a rating prompt over clickable
// stars, a heading over a share bar, and a German "might interest you"
// section of teasers. The article's paragraphs stay; the rest goes.
func TestExtractLeavesOutWidgets(t *testing.T) {
	got := extractWidget(t, "share-prompts.html", "https://news.test/otters", "Otters return to the upper valley")
	for _, w := range []string{
		"The river trust counted forty-one otters",
		"Ten years ago the same walk turned up four.",
		"The trust will count again in October, when the young leave their holts.",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("text lacks %q:\n%s", w, got)
		}
	}
	for _, n := range []string{
		"LEA TAMBIÉN",
		"Möchten Sie den Artikel teilen?",
		"War der Artikel nützlich?",
		"Liked it?",
		"Das könnte dich auch interessieren",
		"Beavers build a dam",
		"heron colony",
	} {
		if strings.Contains(got, n) {
			t.Errorf("text holds %q:\n%s", n, got)
		}
	}
}

// TestMarkWidgetsKeepsText: a short line beside links that carry words,
// or beside pictures that do nothing on a click, is not a widget.
func TestMarkWidgetsKeepsText(t *testing.T) {
	page := `<html><head><title>Notes</title></head><body>` +
		`<div><p>Photos from the walk:</p><div><img src="/1.jpg"><img src="/2.jpg"><img src="/3.jpg"></div></div>` +
		`<div><p>Sources for this piece:</p><div><a href="/a">the trust's survey</a> <a href="/b">the council minutes</a> <a href="/c">the anglers' letter</a></div></div>` +
		`</body></html>`
	got, err := Extract(Page{URL: "https://news.test/notes", Title: "Notes", HTML: page})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Photos from the walk:", "Sources for this piece:"} {
		if !strings.Contains(got, w) {
			t.Errorf("text lacks %q:\n%s", w, got)
		}
	}
}

// TestExtractLeavesOutPictureCaption: a caption written under a picture
// whose alt text it repeats is left out (a news page's lead picture); a
// paragraph after a picture with a one-word alt is the article's.
func TestExtractLeavesOutPictureCaption(t *testing.T) {
	got := extractWidget(t, "picture-caption.html", "https://news.test/otter", "The first otter of the survey")
	if strings.Contains(got, "A volunteer measures a spraint") {
		t.Errorf("text holds the picture's caption:\n%s", got)
	}
	for _, w := range []string{"The first otter of the survey was seen on the weir", "Otters were common on the river", "eleven."} {
		if !strings.Contains(got, w) {
			t.Errorf("text lacks %q:\n%s", w, got)
		}
	}
}

// TestExtractKeepsDirectory: a run of short lines each holding an e-mail
// address is the page's list of whom to write to and stays; a single
// byline with an address is still left out.
func TestExtractKeepsDirectory(t *testing.T) {
	got := extractWidget(t, "contact-directory.html", "https://news.test/contact", "How to reach the newsroom")
	for _, w := range []string{"Local: local@news.test", "Sport: sport@news.test", "Business: business@news.test", "Culture: culture@news.test", "Letters to the editor should be"} {
		if !strings.Contains(got, w) {
			t.Errorf("text lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "Jo Bloggs") {
		t.Errorf("text holds the byline:\n%s", got)
	}
}

// extractWidget reads the fixture testdata/widgets/name as the page at url
// with title, and returns the reader's text.
func extractWidget(t *testing.T, name, url, title string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "widgets", name))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Extract(Page{URL: url, Title: title, HTML: string(src)})
	if err != nil {
		t.Fatal(err)
	}
	return got
}
