package reader

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// cleaned parses doc, cleans its body as the main content of a page titled
// title, and writes it.
func cleaned(t *testing.T, doc, title string) string {
	t.Helper()
	n, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	body := findBody(n)
	clean(body, title)
	return writeText(body, nil, false)
}

func TestClean(t *testing.T) {
	para := "The council met on Tuesday and agreed a budget that raises spending on schools by four percent, after a long debate."
	cases := []struct{ name, in, want string }{
		{"caption", `<figure><img src=a><figcaption>A photo of the council</figcaption></figure><p>` + para + `</p>`, para},
		{"related links", `<p>` + para + `</p><ul><li><a href=/a>Other story one</a></li><li><a href=/b>Other story two</a></li></ul>`, para},
		{"a list with text beside its links stays", `<ul><li><a href=/a>Bug 1</a> – tabs unload in the order they were used</li></ul><p>` + para + `</p>`, "- Bug 1 – tabs unload in the order they were used\n\n" + para},
		{"byline and dateline", `<div>By Jane Doe</div><div>November 19, 2019 10:07 AM</div><p>` + para + `</p>`, para},
		{"share bar by name", `<div class="share-tools">Facebook Twitter</div><p>` + para + `</p>`, para},
		{"newsletter box by wording", `<div>Get the latest news in your inbox. Subscribe to our newsletter.</div><p>` + para + `</p>`, para},
		{"headline repeating the title", `<h1>Council agrees budget</h1><p>` + para + `</p>`, para},
		{"other heading kept", `<h2>Schools</h2><p>` + para + `</p>`, "## Schools\n\n" + para},
		{"comments", `<p>` + para + `</p><div id="comments"><p>` + para + `</p><p>` + para + `</p></div>`, para},
		{"small print by the renderer", `<div data-cdpguard-box="0,0,600,200" data-cdpguard-fs="18"><p data-cdpguard-box="0,0,600,100" data-cdpguard-fs="18">` + para + `</p><p data-cdpguard-box="0,100,600,20" data-cdpguard-fs="12">Reuters staff in London</p></div>`, para},
		{"table data kept", `<table><tr><td>1</td><td>Kyle Busch</td><td>5040</td></tr></table><p>` + para + `</p>`, "1 | Kyle Busch | 5040\n\n" + para},
		{"inline link kept", `<p>The <a class="share" href=/x>council</a> met.</p>`, "The council met."},
		{"caption span", `<div><p>` + para + `</p><span class="newsCaption">The council chamber <span>(Image: GETTY)</span></span></div>`, para},
		{"teaser list", `<p>` + para + `</p><table><tr><td><a href=/a>Mayor opens bridge</a><br>The mayor opened the new bridge on Monday.</td></tr><tr><td><a href=/b>Schools close early</a><br>Snow closed the schools on Friday.</td></tr><tr><td><a href=/c>Library wins award</a><br>The library won a national award.</td></tr></table>`, para},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := cleaned(t, c.in, "Council agrees budget - The Daily"); got != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestProseCluster(t *testing.T) {
	para := strings.Repeat("Running text of the article, long enough to count as prose. ", 3)
	doc := `<body><nav><a href=/>Home</a> <a href=/n>News</a></nav>
		<div id="bio"><p>` + para + `</p></div>
		<div id="story"><p>` + para + `</p><p>` + para + `</p><p>` + para + `</p></div>
		<div class="comments"><p>` + para + `</p><p>` + para + `</p><p>` + para + `</p><p>` + para + `</p></div></body>`
	n, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	best, prose, total := proseCluster(findBody(n))
	if best == nil || attr(best, "id") != "story" {
		t.Fatalf("cluster %v, want #story", best)
	}
	if prose != 3*len([]rune(strings.TrimSpace(para))) || total <= prose {
		t.Errorf("prose %d of %d", prose, total)
	}
}

func TestExtractUsesClusterWhenPortPicksABox(t *testing.T) {
	// The port weighs class names; a page whose article sits in an
	// unnamed div beside a well-named author box gets the cluster.
	para := strings.Repeat("Running text of the article, long enough to count as prose. ", 3)
	doc := `<html><head><title>T</title></head><body><div><div><p>` + strings.Repeat(para, 1) + `</p><p>` + para + `</p><p>` + para + `</p><p>` + para + `</p></div></div></body></html>`
	text, err := Extract(Page{URL: "https://site.test/a", Title: "T", HTML: doc})
	if err != nil || strings.Count(text, "Running text") != 12 {
		t.Errorf("Extract: %v\n%s", err, text)
	}
}

// TestExtractFormPage: an ASP.NET page holds its whole body in one form;
// the article in it is read, a search form beside an article is not.
func TestExtractFormPage(t *testing.T) {
	para := "<p>The council met on Tuesday and agreed a budget that raises spending on schools by four percent, after a long debate.</p>"
	page := `<html><body><form id="aspnetForm"><div>` + strings.Repeat(para, 10) + `</div></form></body></html>`
	text, err := Extract(Page{URL: "http://example.com/a", HTML: page})
	if err != nil || !strings.Contains(text, "agreed a budget") {
		t.Errorf("article in a page-wide form: %q, %v", text, err)
	}
	page = `<html><body><form><input name=q> Search the site for news</form><div>` + strings.Repeat(para, 10) + `</div></body></html>`
	if text, err = Extract(Page{URL: "http://example.com/a", HTML: page}); err != nil || strings.Contains(text, "Search the site") {
		t.Errorf("search form read: %q, %v", text, err)
	}
}

// TestExtractKeepsListBesideParagraph: narrowing to the prose cluster never
// stops at a single paragraph, so a search page's result list stays.
func TestExtractKeepsListBesideParagraph(t *testing.T) {
	page := `<html><body><main><h1>Results</h1><ol><li><a href="http://example.org/a">First result</a> snippet one</li></ol>` +
		`<p>The reader keeps the main text of a page and leaves the chrome out. This paragraph is long enough that the extractor takes it for the main content.</p></main></body></html>`
	text, err := Extract(Page{URL: "http://allowed.test/search/?q=x", HTML: page})
	if err != nil || !strings.Contains(text, "First result <http://example.org/a>") {
		t.Errorf("result list left out: %q, %v", text, err)
	}
}

func TestCleanRelatedSection(t *testing.T) {
	para := strings.Repeat("The article's own sentence goes on here. ", 8)
	teaser := "<h4><a href=/x>Another story about something</a></h4><p>" + strings.Repeat("Its summary, long enough to read as prose. ", 3) + "</p>"
	doc := "<div><p>" + para + "</p><p>" + para + "</p><p>" + para + "</p>" +
		"<section><header><h2>Related Stories</h2></header>" + teaser + teaser + "</section></div>"
	got := cleaned(t, doc, "")
	if strings.Contains(got, "Another story") || strings.Contains(got, "Related Stories") {
		t.Errorf("related section kept: %q", got)
	}
	if !strings.Contains(got, "own sentence") {
		t.Errorf("article dropped: %q", got)
	}
	// A "related" box inside the article, beside most of its paragraphs:
	// only its own links go, the paragraphs after it stay.
	doc = "<div><p>" + para + "</p><div><h2>related news</h2></div><p>" + para + "</p><p>" + para + "</p><p>" + para + "</p></div>"
	if got := cleaned(t, doc, ""); strings.Count(got, "own sentence") < 30 {
		t.Errorf("article paragraphs after a related heading dropped: %q", got)
	}
}

func TestCleanAdWrapperWithProse(t *testing.T) {
	para := strings.Repeat("You might have heard this before, and here is more. ", 3)
	got := cleaned(t, `<div><div class="section-and-ad"><div class="section-text">`+para+`</div></div><div class="ad-slot">Buy now</div></div>`, "")
	if !strings.Contains(got, "You might have heard") {
		t.Errorf("prose in an ad-named wrapper dropped: %q", got)
	}
	if strings.Contains(got, "Buy now") {
		t.Errorf("ad kept: %q", got)
	}
}
