package readeval

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The corpora added for issue 35, beside the AEB and L3S-GN1: other eras,
// other languages, other kinds of site. Dragnet's and CleanEval's pages are
// reserved for a benchmark kept outside the repository and are never
// loaded here (nor anything derived from them).

// utomoID turns a file name such as "amd (1).htm" into a URL-safe id
// ("amd-1").
var utomoID = strings.NewReplacer(" (", "-", ")", "", " ", "_")

// LoadUtomo reads the content-extraction sets of Utomo & Leu
// (MSVCode/ir-research-data, research use only; the gold standard is
// human-made): dir/Extraction/big5-<yy>/{html,gold} become corpus "big9"
// (9 news sites in 2005, 2009, 2013 and 2017, ids "<yy>-<name>") and
// dir/Extraction/chaos-all/{html,gold} corpus "chaos" (2017 pages of about
// 240 sites found by 36 search queries).
func LoadUtomo(dir string) ([]Page, error) {
	sets, err := filepath.Glob(filepath.Join(dir, "Extraction", "*", "gold"))
	if err != nil || len(sets) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoCorpus, dir)
	}
	sort.Strings(sets)
	var pages []Page
	for _, gold := range sets {
		set := filepath.Base(filepath.Dir(gold))
		corpus, prefix := "chaos", ""
		if yy, ok := strings.CutPrefix(set, "big5-"); ok {
			corpus, prefix = "big9", yy+"-"
		}
		names, err := filepath.Glob(filepath.Join(gold, "*.txt"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, name := range names {
			base := strings.TrimSuffix(filepath.Base(name), ".txt")
			truth, err := os.ReadFile(name)
			if err != nil {
				return nil, err
			}
			var doc []byte
			for _, ext := range []string{".htm", ".html"} {
				if doc, err = os.ReadFile(filepath.Join(filepath.Dir(gold), "html", base+ext)); err == nil {
					break
				}
			}
			if err != nil {
				return nil, fmt.Errorf("readeval: %s page %s: %w", corpus, base, err)
			}
			if strings.TrimSpace(string(truth)) == "" {
				continue
			}
			pages = append(pages, Page{Corpus: corpus, ID: prefix + utomoID.Replace(base), HTML: doc, Truth: string(truth)})
		}
	}
	return pages, nil
}

// cleanEvalTag matches the markup of a CleanEval-format gold standard
// (<p>, <h>, <l> at the start of a paragraph).
var cleanEvalTag = regexp.MustCompile(`(?m)^\s*<[phl]>`)

// LoadCleanPortalEval reads CleanPortalEval (Endrédy & Novák 2013,
// ppke-nlpg/CleanPortalEval; 71 pages of 4 news portals and blogs, gold
// standard cleaned by hand in CleanEval's format, but not CleanEval's
// pages): input/<id>.html (in a <text id=URL> wrapper, removed) and
// GoldStandard/<id>.txt (its URL line and paragraph tags removed).
func LoadCleanPortalEval(dir string) ([]Page, error) {
	names, err := filepath.Glob(filepath.Join(dir, "GoldStandard", "*.txt"))
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoCorpus, dir)
	}
	sort.Strings(names)
	var pages []Page
	for _, name := range names {
		id := strings.TrimSuffix(filepath.Base(name), ".txt")
		gold, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		doc, err := os.ReadFile(filepath.Join(dir, "input", id+".html"))
		if err != nil {
			return nil, fmt.Errorf("readeval: cpe page %s: %w", id, err)
		}
		truth := string(gold)
		if i := strings.Index(truth, "URL:"); i >= 0 && strings.TrimSpace(truth[:i]) == "" {
			if j := strings.IndexByte(truth[i:], '\n'); j >= 0 {
				truth = truth[i+j:]
			}
		}
		truth = html.UnescapeString(cleanEvalTag.ReplaceAllString(truth, "\n"))
		pages = append(pages, Page{Corpus: "cpe", ID: id, HTML: unwrapText(doc), Truth: truth})
	}
	return pages, nil
}

// unwrapText removes CleanEval's <text id=...> wrapper around a page.
func unwrapText(doc []byte) []byte {
	s := strings.TrimSpace(string(doc))
	if strings.HasPrefix(s, "<text ") {
		if i := strings.IndexByte(s, '>'); i >= 0 {
			s = s[i+1:]
		}
		s = strings.TrimSuffix(s, "</text>")
	}
	return []byte(s)
}

// LoadTrafilatura reads trafilatura's evaluation set (adbar/trafilatura,
// tests/, Apache-2.0; pages of news sites, magazines, blogs, shops,
// government and company pages, mostly German, English and French): for
// each page, snippets a human chose that the main text must contain
// ("with") and must not ("without"), not the whole body. Such a page is
// scored on its snippets (see Page.Match); Truth holds the "with"
// snippets, for the broken-page check. The pages are eval/<file> or
// cache/<file>, named in evaldata.json.
func LoadTrafilatura(dir string) ([]Page, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "evaldata.json"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoCorpus, err)
	}
	var data map[string]struct {
		File    string   `json:"file"`
		With    []string `json:"with"`
		Without []string `json:"without"`
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, fmt.Errorf("readeval: trafilatura evaldata: %w", err)
	}
	var pages []Page
	for _, d := range data {
		if len(d.With) == 0 {
			continue
		}
		var doc []byte
		for _, sub := range []string{"eval", "cache"} {
			if doc, err = os.ReadFile(filepath.Join(dir, sub, d.File)); err == nil {
				break
			}
		}
		if err != nil {
			continue // named in evaldata.json but not in the repository
		}
		id := strings.TrimSuffix(d.File, ".html")
		pages = append(pages, Page{Corpus: "traf", ID: id, HTML: doc, Truth: strings.Join(d.With, "\n"), With: d.With, Without: d.Without})
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i].ID < pages[j].ID })
	return pages, nil
}

// Match counts pred against the page's truth: n-word shingles for a page
// with a whole labelled body, snippets for a page labelled by snippets
// (each "with" snippet found is a true positive, each one missing a false
// negative, each "without" snippet found a false positive; normalised to
// sum to 1 like shingle counts). A snippet is found when its words occur
// in a row in pred's words, the first and the last possibly cut (the
// snippets are cut out of the text mid-word, as trafilatura's own
// substring check allows).
func (p Page) Match(pred string, n int) Counts {
	if len(p.With) == 0 {
		return Match(p.Truth, pred, n)
	}
	words := strings.Join(Tokens(pred), "\x00")
	found := func(s string) bool {
		t := Tokens(s)
		return len(t) > 0 && strings.Contains(words, strings.Join(t, "\x00"))
	}
	var c Counts
	for _, s := range p.With {
		if found(s) {
			c.TP++
		} else {
			c.FN++
		}
	}
	for _, s := range p.Without {
		if found(s) {
			c.FP++
		}
	}
	if s := c.TP + c.FP + c.FN; s > 0 {
		c.TP, c.FP, c.FN = c.TP/s, c.FP/s, c.FN/s
	}
	return c
}
