package reader

import (
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func write(t *testing.T, doc string, wholeDoc bool) string {
	t.Helper()
	n, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("https://site.test/dir/page.html")
	return writeText(n, base, wholeDoc)
}

func TestWriteText(t *testing.T) {
	cases := []struct {
		name, in, want string
		whole          bool
	}{
		{"paragraphs and headings", `<h1>Title</h1><p>One
			two</p><p>Three</p><h3>Sub</h3><p>Four</p>`,
			"# Title\n\nOne two\n\nThree\n\n### Sub\n\nFour", false},
		{"lists", `<ul><li>a</li><li>b<ol start="3"><li>c</li><li>d</li></ol></li></ul>`,
			"- a\n- b\n  3. c\n  4. d", false},
		{"table", `<table><tr><th>Name</th><th>Value</th></tr><tr><td>x <p>y</p></td><td>1</td></tr></table>`,
			"Name | Value\nx y | 1", false},
		{"links", `<p><a href="/x">same</a>, <a href="https://SITE.test:8443/y">same host other port</a>, <a href="https://other.test/z?q=1">other</a>, <a href="mailto:a@b">mail</a>, <a href="https://other.test/img"><img src=i></a></p>`,
			"same, same host other port, other <https://other.test/z?q=1>, mail,", false},
		{"relative link to other host", `<p><a href="//cdn.test/p">cdn</a></p>`, "cdn <https://cdn.test/p>", false},
		{"chrome left out", `<p>keep</p><nav>NAV</nav><form>FORM<input value=v></form><button>BTN</button><select><option>OPT</select><script>SCRIPT</script><style>STYLE</style><textarea>TA</textarea>`,
			"keep", false},
		{"hidden left out", `<p>keep</p><p hidden>H1</p><p style="display: none">H2</p><p aria-hidden="true">H3</p><p style="visibility:hidden">H4</p>`,
			"keep", false},
		{"site chrome only in whole documents", `<header>HEAD</header><p>keep</p><footer>FOOT</footer><aside>SIDE</aside>`,
			"keep", true},
		{"site chrome kept in main content", `<header>HEAD</header><p>keep</p>`,
			"HEAD\n\nkeep", false},
		{"pre keeps whitespace", "<pre>a  b\n  c</pre><p>d</p>", "a  b\n  c\n\nd", false},
		{"br and inline", `<p>a<br>b <em>c</em>d</p>`, "a\nb cd", false},
		{"whitespace between inline", `<p><span>a</span> <span>b</span></p>`, "a b", false},
		{"link inside a word does not split it", `<p>The <a href="https://o.test/a">Arte</a>mis m<a href="https://o.test/b">oon</a> program</p>`,
			"The Artemis <https://o.test/a> moon <https://o.test/b> program", false},
		{"link notes before a line break", `<p><a href="https://o.test/a">x</a></p><p>y</p>`,
			"x <https://o.test/a>\n\ny", false},
		{"www is the same site", `<p><a href="https://www.site.test/x">home</a></p>`, "home", false},
		{"non-breaking spaces", "<p>a<b>\u00a0c</b>\u00a0<i>d\u00a0</i>e</p>", "a c d e", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := write(t, c.in, c.whole); got != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

func TestCompose(t *testing.T) {
	got := Compose("https://a.test/", " A\n title ", []string{"n1"}, "body")
	if want := "Title: A title\nURL: https://a.test/\nNote: n1\n\nbody"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestExtractFallsBackToBody(t *testing.T) {
	got, err := Extract(Page{URL: "https://a.test/", HTML: `<body><header>SITE</header><main><a href="https://b.test/">short result</a></main><footer>FOOT</footer></body>`})
	if err != nil {
		t.Fatal(err)
	}
	if got != "short result <https://b.test/>" {
		t.Errorf("got %q", got)
	}
}

func TestCut(t *testing.T) {
	text := strings.Repeat("word ünïcode line\n", 200)
	for _, maxChars := range []int{1, 7, 100, 1000, 30000} {
		var b strings.Builder
		offset := 0
		for i := 0; ; i++ {
			s, err := Cut(text, offset, maxChars)
			if err != nil {
				t.Fatal(err)
			}
			if n := len([]rune(s.Text)); n > maxChars || n == 0 {
				t.Fatalf("maxChars %d: section of %d chars", maxChars, n)
			}
			if s.TotalChars != len([]rune(text)) || s.Offset != offset {
				t.Fatalf("maxChars %d: offset %d total %d", maxChars, s.Offset, s.TotalChars)
			}
			b.WriteString(s.Text)
			if s.NextOffset == 0 {
				break
			}
			offset = s.NextOffset
		}
		if b.String() != text {
			t.Errorf("maxChars %d: sections do not stitch back", maxChars)
		}
	}
	if s, _ := Cut(text, 0, 100); !strings.HasSuffix(s.Text, "\n") {
		t.Errorf("a section does not end at a line break: %q", s.Text)
	}
	if _, err := Cut(text, len([]rune(text))+1, 0); err == nil {
		t.Error("offset past the end: no error")
	}
	if s, err := Cut(text, len([]rune(text)), 0); err != nil || s.Text != "" || s.NextOffset != 0 {
		t.Errorf("offset at the end: %+v %v", s, err)
	}
	if _, err := Cut(text, -1, 0); err == nil {
		t.Error("negative offset: no error")
	}
	if s, _ := Cut("", 0, 0); s.TotalChars != 0 || s.Text != "" {
		t.Errorf("empty text: %+v", s)
	}
}

func TestScore(t *testing.T) {
	p, r := Score("The cat <https://x.test/> sat.", "the cat sat on the mat")
	if p != 1 || r != 0.5 {
		t.Errorf("precision %v recall %v", p, r)
	}
}
