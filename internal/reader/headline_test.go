package reader

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtractPostUnderHeadline reads synthetic rendered pages (the boxes
// and font sizes as js/read.js writes them) of the kinds issue 35's outside
// benchmark found read wrong: a short post that lost to a larger author
// box, side column, responses footer, Blogger profile or edition menu, a
// short post on a page that fell back to its whole body, a forum thread
// cut to one post, and a shop's listing whose names and prices were left
// out as teasers and chrome lines. Each page's text must hold its post and leave
// the rest out.
func TestExtractPostUnderHeadline(t *testing.T) {
	cases := []struct {
		page      string
		want, not []string
	}{
		{"author-box", []string{"We planted the last row of garlic this morning, just before the rain, and the whole street came out to watch the geese go over."}, []string{"twenty years", "two cats"}},
		{"side-column", []string{"The bakery on the corner reopened today with a new oven. The first loaves sold out by eight, and the queue went round the block."}, []string{"twenty years"}},
		{"responses-footer", []string{"A heron on the weir at dawn, standing perfectly still while the water rushed past its legs."}, []string{"RSS 2.0", "Reader 3 said"}},
		{"blogger-profile", []string{"“The best time to plant a tree was twenty years ago. The second best time is now.” Seen on a card in the hardware shop window."}, []string{"retired librarian", "Blog Archive"}},
		{"edition-menu", []string{"Storm clouds over the harbour as the last ferry of the evening leaves for the islands."}, []string{"Edition:", "picture desk"}},
		{"whole-page", []string{"Library hours change next week: open until eight on Thursdays, closed on Monday mornings for the stocktake."}, []string{"Notice 3", "Copyright 2026"}},
		{"forum-thread", []string{"Has anyone tried growing sweet potatoes this far north? I ha", "I grew them two summers running in a polytunnel. The first y", "Black plastic is the trick. Also choose a short season varie", "Thanks all. I will try the plastic and a short season variet", "Good luck! Cure them in a warm room for a week after lifting"}, []string{"Copyright 2026"}},
		{"listing", []string{"Folding garden chair, teak", "£24.99", "Child’s picnic chair, pine", "£12.75"}, []string{"Free delivery", "garden club"}},
	}
	for _, c := range cases {
		t.Run(c.page, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "posts", c.page+".html"))
			if err != nil {
				t.Fatal(err)
			}
			doc := string(src)
			title := doc[strings.Index(doc, "<title>")+len("<title>") : strings.Index(doc, "</title>")]
			got, err := Extract(Page{URL: "https://blog.test/" + c.page, Title: title, HTML: doc})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("text lacks %q:\n%s", w, got)
				}
			}
			for _, n := range c.not {
				if strings.Contains(got, n) {
					t.Errorf("text holds %q:\n%s", n, got)
				}
			}
		})
	}
}

// TestFirstIndex: past scanBudget the suffix array finds the same first
// occurrence as strings.Index, for keys found once, many times and never.
func TestFirstIndex(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "paragraph%dwithwordsofprose%d\x00", i%700, i*7919)
	}
	s := b.String()
	fast := firstIndex(s, 1)
	indexed := firstIndex(s, scanBudget) // lines*len(s) > scanBudget
	for _, key := range []string{"paragraph0withwordsofprose0", "paragraph12withwordsofprose", "withwordsofprose", "paragraph699", "notinthetextatallxyzxyzxyz", "prose23751\x00paragraph3"} {
		for range 2 { // the second look-up comes from the cache
			if got, want := indexed(key), strings.Index(s, key); got != want {
				t.Errorf("%q: suffix array %d, strings.Index %d", key, got, want)
			}
			if got, want := fast(key), strings.Index(s, key); got != want {
				t.Errorf("%q: below the budget %d, strings.Index %d", key, got, want)
			}
		}
	}
}

// BenchmarkExtractManyParagraphs reads a page of 16,000 short paragraphs
// under its headline: holdsPost searched every line in every block's text
// (3.7 s of it for this page before firstIndex).
func BenchmarkExtractManyParagraphs(b *testing.B) {
	var h strings.Builder
	h.WriteString(`<html><head><title>Big headline here</title></head><body><main><h1>Big headline here</h1>`)
	for i := range 16000 {
		fmt.Fprintf(&h, "<p>Paragraph number %d with some words of prose that go on and on, sentence %d.</p>\n", i, i*7919)
	}
	h.WriteString(`</main><aside class="author-bio"><p>About the author: a long bio.</p></aside></body></html>`)
	page := Page{URL: "https://x.test/", Title: "Big headline here", HTML: h.String()}
	b.SetBytes(int64(len(page.HTML)))
	for b.Loop() {
		if _, err := Extract(page); err != nil {
			b.Fatal(err)
		}
	}
}
