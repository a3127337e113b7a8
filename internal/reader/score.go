package reader

import (
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

// urlNote matches the " <url>" annotations the writer adds to links.
var urlNote = regexp.MustCompile(` ?<https?://[^>\s]*>`)

// Score returns the token precision and recall of got against want, as the
// fixture measurement counts them: words lower-cased with surrounding
// punctuation trimmed, counted as multisets; got's "<url>" annotations and
// the writer's "#", "-" and "|" markers are not words.
func Score(got, want string) (precision, recall float64) {
	g := tokens(urlNote.ReplaceAllString(got, ""))
	w := tokens(want)
	if len(g) == 0 || len(w) == 0 {
		return 0, 0
	}
	count := map[string]int{}
	for _, t := range w {
		count[t]++
	}
	common := 0
	for _, t := range g {
		if count[t] > 0 {
			count[t]--
			common++
		}
	}
	return float64(common) / float64(len(g)), float64(common) / float64(len(w))
}

func tokens(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		f = strings.ToLower(strings.TrimFunc(f, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }))
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// TextContent returns the text of every text node of an HTML document, as
// the fixtures' expected.html is scored.
func TextContent(doc string) (string, error) {
	n, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		if n.Type == html.ElementNode && (n.Data == "script" || n.Data == "style") {
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String(), nil
}
