package repocheck

import (
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// filePath matches a token that names a file: a name with one of the
// repository's extensions, maybe with folders before it.
var filePath = regexp.MustCompile(`[A-Za-z0-9_.@/-]*[A-Za-z0-9_-]\.(?:go|md|mjs|js|sh|ya?ml|json|html|css|mod|txt|ts|py)\b`)

// pathExempt are names of files outside the repository that comments and
// docs may name, with why.
var pathExempt = map[string]string{
	"DESIGN.md":                    "the product contract, kept beside the repository",
	"p.yaml":                       "an example policy file's name",
	"cli.js":                       "@playwright/mcp's command",
	"lib/devtools.js":              "chrome-devtools-mcp's source",
	"cdp/Browser.js":               "Puppeteer's source",
	"tsconfig.json":                "Puppeteer's build files",
	"tsconfig.base.json":           "Puppeteer's build files",
	"TestExpectations.json":        "Puppeteer's test expectations",
	"utils/build/build.js":         "Playwright's build script",
	"SPEC.spec.js":                 "Puppeteer's specs, by name",
	"harness/ndjson-reporter.js":   "the by-hand conformance harness, described in docs/conformance and not committed",
	"./harness/ndjson-reporter.js": "the by-hand conformance harness, described in docs/conformance and not committed",
	"content/manuals/engine/security/seccomp.md": "Docker's documentation source",
	"expected.html":     "a file of the reader's labelled corpora, fetched by scripts/reader-corpora.sh",
	"ground-truth.json": "a file of the reader's labelled corpora, fetched by scripts/reader-corpora.sh",
	"evaldata.json":     "a file of the reader's labelled corpora, fetched by scripts/reader-corpora.sh",
}

// recordFooter starts the line of a decision record that lists the files it
// names as they were then and which have since moved or gone: a record is a
// frozen record of why, so it keeps the names and says they are history.
const recordFooter = "Files since moved or removed:"

// TestNoDanglingFileNames: no comment of a .go file and no Markdown doc of
// the repository names a file that does not exist. A name with folders is
// looked up from the repository's root, from the naming file's folder and
// as the end of any file's path; a bare name must be the name of a file
// somewhere in the repository. URLs, absolute paths (/tmp/..., /etc/...),
// names with an extension no file of the repository has (.ts, .py: another
// project's) and pathExempt are not checked.
func TestNoDanglingFileNames(t *testing.T) {
	t.Parallel()
	files := repoFiles(t)
	base, exts, tails := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for p := range files {
		base[filepath.Base(p)] = true
		exts[filepath.Ext(p)] = true
		for i := range len(p) {
			if p[i] == '/' {
				tails[p[i+1:]] = true
			}
		}
	}
	found := func(from, name string) bool {
		if !strings.Contains(name, "/") {
			return base[name] || files[filepath.ToSlash(filepath.Join(filepath.Dir(from), name))]
		}
		name = strings.TrimPrefix(name, "./")
		return files[name] || tails[name] || files[filepath.ToSlash(filepath.Join(filepath.Dir(from), name))]
	}
	history := map[string]string{} // record → its footer line
	check := func(from string, line int, text string) {
		for _, name := range fileNames(text) {
			if !exts[filepath.Ext(name)] || pathExempt[name] != "" || found(from, name) {
				continue
			}
			if strings.Contains(history[from], "`"+name+"`") {
				continue
			}
			if strings.HasPrefix(from, "docs/decisions/") {
				t.Errorf("%s:%d names %s, which does not exist: a record keeps it, listed on its %q line", from, line, name, recordFooter)
			} else {
				t.Errorf("%s:%d names %s, which does not exist", from, line, name)
			}
		}
	}
	for p := range files {
		switch {
		case strings.HasSuffix(p, ".md"):
			lines := strings.Split(string(mustRead(t, filepath.Join(root, p))), "\n")
			for i, line := range lines {
				if strings.HasPrefix(line, recordFooter) {
					// The footer runs to the paragraph's end.
					for j := i; j < len(lines) && strings.TrimSpace(lines[j]) != ""; j++ {
						history[p] += lines[j] + "\n"
					}
				}
			}
			for i, line := range lines {
				check(p, i+1, line)
			}
		case strings.HasSuffix(p, ".go"):
			fset := token.NewFileSet()
			f, err := parserParseFile(fset, filepath.Join(root, p))
			if err != nil {
				continue // the compiler reports it
			}
			for _, cg := range f.Comments {
				for _, c := range cg.List {
					pos := fset.Position(c.Pos())
					for i, line := range strings.Split(c.Text, "\n") {
						check(p, pos.Line+i, line)
					}
				}
			}
		}
	}
}

// fileNames returns the names of files in a line of text: not a URL's
// part, an absolute path, a pattern's tail (*_test.go), the start of a
// longer token (go.yaml.in/yaml), a path into node_modules or a versioned
// package (@scope/pkg).
func fileNames(text string) []string {
	var out []string
	for _, loc := range filePath.FindAllStringIndex(text, -1) {
		name, before, after := text[loc[0]:loc[1]], text[:loc[0]], text[loc[1]:]
		if strings.HasPrefix(name, "/") || urlBefore(before) || strings.HasSuffix(before, "*") ||
			longerToken(after) || strings.Contains(name, "node_modules/") || strings.Contains(name, "@") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// TestFileNamesFound: fileNames finds the names a doc would give and
// leaves the rest (a check that finds nothing proves nothing).
func TestFileNamesFound(t *testing.T) {
	line := "see `cdpguard/pipeline.go`, controls_grant.go and docs/decisions/x.md; " +
		"not https://example.com/a/b.js, /tmp/p.yaml, `*_test.go`, go.yaml.in/yaml/v3, @playwright/mcp/cli.js or e2e/node_modules/x/y.js; " +
		"(`./harness/r.js`)."
	got := strings.Join(fileNames(line), " ")
	if want := "cdpguard/pipeline.go controls_grant.go docs/decisions/x.md ./harness/r.js"; got != want {
		t.Errorf("fileNames = %q\nwant        %q", got, want)
	}
}

// longerToken reports whether the text after a name goes on with the same
// token (go.yaml.in/yaml, a.md/b): the name is then not a file's.
func longerToken(after string) bool {
	if after == "" {
		return false
	}
	if after[0] == '/' {
		return true
	}
	return after[0] == '.' && len(after) > 1 && (after[1] >= 'a' && after[1] <= 'z' || after[1] >= 'A' && after[1] <= 'Z')
}

// urlBefore reports whether the token that ends before a name is a URL (the
// name is then part of it).
func urlBefore(before string) bool {
	i := strings.LastIndexAny(before, " \t(<[\"'`")
	w := before[i+1:]
	return strings.Contains(w, "://") || strings.HasPrefix(w, "www.")
}

// repoFiles returns every file of the repository (relative, slash
// separated) but node_modules and hidden folders.
func repoFiles(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
