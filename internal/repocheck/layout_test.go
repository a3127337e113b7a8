package repocheck

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutRow matches a row of the README's Layout table: the folder and its
// one job.
var layoutRow = regexp.MustCompile("^\\| `([^`]+)/` \\| (.+) \\|$")

// layoutTable returns the README's Layout table: folder (without the
// trailing slash) → its one job.
func layoutTable(t *testing.T) map[string]string {
	t.Helper()
	readme := string(mustRead(t, filepath.Join(root, "README.md")))
	_, sec, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no \"## Layout\" section")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	rows := map[string]string{}
	for _, line := range strings.Split(sec, "\n") {
		if m := layoutRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2]
		}
	}
	if len(rows) < 10 {
		t.Fatalf("the Layout table has %d rows: not read right?", len(rows))
	}
	return rows
}

// TestLayoutNamesEveryFolder: the README's Layout table has a row for every
// package of internal/ and for every top-level folder (a row of its own or
// of a folder below it), and every row's folder exists.
func TestLayoutNamesEveryFolder(t *testing.T) {
	t.Parallel()
	rows := layoutTable(t)
	top, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range top {
		if !d.IsDir() || skipDir(d.Name()) {
			continue
		}
		named := false
		for f := range rows {
			named = named || f == d.Name() || strings.HasPrefix(f, d.Name()+"/")
		}
		if !named {
			t.Errorf("the README's Layout table names no %s/", d.Name())
		}
	}
	for _, pkg := range internalPackages(t) {
		if _, ok := rows[pkg]; !ok {
			t.Errorf("the README's Layout table has no row for %s/", pkg)
		}
	}
	for f := range rows {
		if fi, err := os.Stat(filepath.Join(root, f)); err != nil || !fi.IsDir() {
			t.Errorf("the README's Layout table names %s/, which is not a folder", f)
		}
	}
}

// TestPackageDocsAgreeWithLayout: every package of internal/ (and below)
// has one doc comment, starting "Package <name>", and its first sentence
// shares a word that says what the package is about with its row of the
// Layout table (the package's own, or its parent's for a package below
// one), so that the table and the doc comment tell one story.
func TestPackageDocsAgreeWithLayout(t *testing.T) {
	t.Parallel()
	rows := layoutTable(t)
	files, _ := moduleFiles(t)
	docs := map[string][]string{} // folder → its doc comments
	names := map[string]string{}  // folder → package name
	for _, gf := range files {
		if !strings.HasPrefix(gf.pkg, "internal/") || gf.f.Name.Name == "main" {
			continue
		}
		names[gf.pkg] = gf.f.Name.Name
		if gf.f.Doc != nil {
			docs[gf.pkg] = append(docs[gf.pkg], gf.f.Doc.Text())
		}
	}
	for _, pkg := range slices.Sorted(maps.Keys(names)) {
		name := names[pkg]
		d := docs[pkg]
		if len(d) != 1 {
			t.Errorf("%s: %d package doc comments, want one (doc.go or the package clause of its main file)", pkg, len(d))
			continue
		}
		if !strings.HasPrefix(d[0], "Package "+name+" ") {
			t.Errorf("%s: the doc comment starts %q, want \"Package %s ...\"", pkg, firstWords(d[0], 4), name)
			continue
		}
		row, ok := rows[pkg]
		for p := pkg; !ok && strings.Contains(p, "/"); {
			p = filepath.ToSlash(filepath.Dir(p))
			row, ok = rows[p]
		}
		if !ok {
			continue // TestLayoutNamesEveryFolder reports it
		}
		if shared := sharedWords(firstSentence(d[0]), row); len(shared) == 0 {
			t.Errorf("%s: the doc comment's first sentence and the Layout row share no word:\n\tdoc: %s\n\trow: %s", pkg, firstSentence(d[0]), row)
		}
	}
}

// internalPackages returns the folders right below internal/.
func internalPackages(t *testing.T) []string {
	t.Helper()
	ds, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds {
		if d.IsDir() && !skipDir(d.Name()) {
			out = append(out, "internal/"+d.Name())
		}
	}
	return out
}

// firstSentence returns a doc comment's first sentence, without its
// "Package <name>" start.
func firstSentence(doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i]
	}
	f := strings.SplitN(doc, " ", 3)
	if len(f) == 3 {
		return f[2]
	}
	return doc
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	return strings.Join(f[:min(n, len(f))], " ")
}

// word matches the words compared: letters, at least four of them.
var word = regexp.MustCompile(`[A-Za-z][A-Za-z-]{3,}`)

// commonWords say nothing of what a package is about.
var commonWords = map[string]bool{
	"that": true, "with": true, "from": true, "their": true, "them": true, "they": true,
	"every": true, "each": true, "what": true, "which": true, "when": true, "where": true,
	"into": true, "only": true, "this": true, "these": true, "those": true, "have": true,
	"holds": true, "keeps": true, "makes": true, "guard": true, "guard's": true, "cdpguard": true,
	"agent": true, "agents": true, "user": true, "users": true, "browser": true, "page": true,
	"pages": true, "other": true, "does": true, "must": true, "than": true, "there": true,
	"over": true, "under": true, "before": true, "after": true, "once": true, "one's": true,
}

// sharedWords returns the words of a (stemmed) that b has too.
func sharedWords(a, b string) []string {
	in := map[string]bool{}
	for _, w := range word.FindAllString(strings.ToLower(b), -1) {
		in[stem(w)] = true
	}
	var out []string
	for _, w := range word.FindAllString(strings.ToLower(a), -1) {
		if s := stem(w); in[s] && !commonWords[w] && !commonWords[s] {
			out = append(out, w)
		}
	}
	return out
}

// stem cuts the plural and possessive endings, so "targets" meets "target's".
func stem(w string) string {
	w = strings.TrimSuffix(w, "'s")
	w = strings.TrimSuffix(w, "es")
	return strings.TrimSuffix(w, "s")
}

// TestSharedWords: the agreement check meets a plural and a possessive,
// and does not count words that say nothing of a package.
func TestSharedWords(t *testing.T) {
	if got := sharedWords("holds the targets a user opened", "the target's record"); len(got) != 1 || got[0] != "targets" {
		t.Errorf("sharedWords = %v, want [targets]", got)
	}
	if got := sharedWords("keeps what the guard does for every agent", "the guard's agents and what they do"); len(got) != 0 {
		t.Errorf("sharedWords = %v, want none", got)
	}
	if got := firstSentence("Package x holds the y. More."); got != "holds the y" {
		t.Errorf("firstSentence = %q", got)
	}
}
