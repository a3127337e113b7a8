package readeval

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	truth := "one two three four five six"
	if c := Match(truth, truth, 4); c.TP != 1 || c.FP != 0 || c.FN != 0 {
		t.Errorf("identical text: %+v", c)
	}
	// Extra words around the article: 3 shingles right, 2 extra.
	c := Match(truth, "menu x one two three four five six", 4)
	if math.Abs(c.TP-3.0/5) > 1e-9 || math.Abs(c.FP-2.0/5) > 1e-9 || c.FN != 0 {
		t.Errorf("extra chrome: %+v", c)
	}
	if c := Match(truth, "", 4); c.TP != 0 || c.FN != 1 {
		t.Errorf("no output: %+v", c)
	}
	// Words are \w+ runs: a word split at a link ("Arte mis") is two words.
	if c := Match("Artemis moon", "Arte mis moon", 1); c.TP == 1 {
		t.Errorf("split word scored as whole: %+v", c)
	}
}

func TestScore(t *testing.T) {
	cs := []Counts{{TP: 1}, {TP: 0.5, FP: 0.5}, {FN: 1}}
	m := Score(cs)
	// Precision over pages with output (2): (1 + 0.5) / 2; recall over 3.
	if math.Abs(m.P-0.75) > 1e-9 || math.Abs(m.R-2.0/3) > 1e-9 {
		t.Errorf("P %.3f R %.3f, want 0.75 0.667", m.P, m.R)
	}
	if m.F1Err <= 0 {
		t.Errorf("no bootstrap error: %+v", m)
	}
}

func TestSelectRefusesHeldOut(t *testing.T) {
	var pages []Page
	for i := range 300 {
		pages = append(pages, Page{Corpus: "c", ID: fmt.Sprint(i)})
	}
	for _, set := range []Set{HeldOutSet, All} {
		if _, err := Select(pages, set, false, 0); !errors.Is(err, ErrHeldOut) {
			t.Errorf("set %s without final: %v, want ErrHeldOut", set, err)
		}
	}
	tune, err := Select(pages, Tune, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	held, err := Select(pages, HeldOutSet, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(tune)+len(held) != len(pages) || len(held) < 80 || len(held) > 120 {
		t.Errorf("split %d tune / %d held out of %d, want about a third held out", len(tune), len(held), len(pages))
	}
	for _, p := range tune {
		if HeldOut(p) {
			t.Fatalf("held-out page %s in the tuning set", p.ID)
		}
	}
	if s, _ := Select(pages, Tune, false, 10); len(s) != 10 {
		t.Errorf("limit 10: %d pages", len(s))
	}
}

func TestLabelled(t *testing.T) {
	doc := `<p><span class="x-nc-sel1">Head</span> <span class="x-nc-sel2">Body <a href=x>link</a> text</span><span class="x-nc-sel0">menu</span></p>`
	got, err := labelled([]byte(doc), "x-nc-sel2")
	if err != nil || got != "Body link text\n" {
		t.Errorf("labelled: %q, %v", got, err)
	}
}

func TestBodyText(t *testing.T) {
	// A crawl cut inside <title>: the page is the title's text, nothing renders.
	cut := "<html><head><title>Page &lt;body&gt;&lt;p&gt;The article</title></head><body></body></html>"
	if s, err := BodyText(cut); err != nil || strings.Contains(s, "article") {
		t.Errorf("title text counted as the body: %q, %v", s, err)
	}
	if s, err := BodyText("<html><body><p>The article</p><script>x()</script></body></html>"); err != nil || strings.TrimSpace(s) != "The article" {
		t.Errorf("body text: %q, %v", s, err)
	}
}

func TestMatchSnippets(t *testing.T) {
	p := Page{Corpus: "traf", With: []string{"the first line,", "last words"}, Without: []string{"Impressum"}}
	// Found across punctuation and line breaks; a word split off is not found.
	c := p.Match("The page: the first\nline and its last words. Impressum", 4)
	if math.Abs(c.TP-2.0/3) > 1e-9 || math.Abs(c.FP-1.0/3) > 1e-9 || c.FN != 0 {
		t.Errorf("snippets: %+v", c)
	}
	if c := p.Match("the first line, last word", 4); math.Abs(c.TP-0.5) > 1e-9 || math.Abs(c.FN-0.5) > 1e-9 || c.FP != 0 {
		t.Errorf("a snippet cut short counted as found: %+v", c)
	}
	whole := Page{Truth: "one two three four five"}
	if c := whole.Match("one two three four five", 4); c.TP != 1 {
		t.Errorf("whole-body page: %+v", c)
	}
}

func TestCleanPortalEvalGold(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"GoldStandard/site_01.txt": "\nURL: http://example.com/a\n<h>Title here\n \n<p>First &amp; second\n line.\n",
		"input/site_01.html":       "<text id=\"http://example.com/a\">\n<html><body><p>x</p></body></html>\n</text>\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pages, err := LoadCleanPortalEval(dir)
	if err != nil || len(pages) != 1 {
		t.Fatalf("load: %v, %d pages", err, len(pages))
	}
	p := pages[0]
	if strings.Contains(p.Truth, "URL") || strings.Contains(p.Truth, "<") || !strings.Contains(p.Truth, "First & second") {
		t.Errorf("truth %q", p.Truth)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(p.HTML)), "<html>") || strings.Contains(string(p.HTML), "</text>") {
		t.Errorf("page not unwrapped: %q", p.HTML)
	}
}

func TestMatchSnippetsCutMidWord(t *testing.T) {
	p := Page{Corpus: "traf", With: []string{"cination reduces risk. Acc"}}
	if c := p.Match("Vaccination reduces risk. According to", 4); c.TP != 1 {
		t.Errorf("snippet cut mid-word not found: %+v", c)
	}
}
