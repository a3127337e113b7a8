package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// root is the module's root, from this package's folder.
const root = "../.."

// goFile is one parsed non-test .go file of the module.
type goFile struct {
	path string // slash-separated, relative to the module root
	pkg  string // its folder, relative to the module root
	f    *ast.File
}

// parsed is the module's files, parsed once for every check.
var parsed struct {
	once  sync.Once
	fset  *token.FileSet
	files []goFile
	err   error
	skip  []string
}

// moduleFiles parses every non-test .go file of the module: every folder
// below the root but other modules (a go.mod of their own), node_modules
// and hidden folders. It fails the test when the walk finds none. The
// positions are in the returned FileSet.
func moduleFiles(t *testing.T) ([]goFile, *token.FileSet) {
	t.Helper()
	parsed.once.Do(func() {
		parsed.fset = token.NewFileSet()
		parsed.files, parsed.skip, parsed.err = parseModule(parsed.fset)
	})
	for _, s := range parsed.skip {
		// The compiler fails on it too; a file being written in the
		// checkout must not hide every other file's findings.
		t.Logf("skipped: %s", s)
	}
	if parsed.err != nil {
		t.Fatal(parsed.err)
	}
	if len(parsed.files) < 100 {
		t.Fatalf("found %d .go files under %s: not the module's root?", len(parsed.files), root)
	}
	return parsed.files, parsed.fset
}

// parseModule walks the module for moduleFiles; skipped are the files
// that do not parse.
func parseModule(fset *token.FileSet) (out []goFile, skipped []string, err error) {
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (skipDir(d.Name()) || exists(filepath.Join(p, "go.mod"))) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, rerr := os.ReadFile(p)
		if rerr != nil {
			return rerr
		}
		f, perr := parser.ParseFile(fset, rel, src, parser.ParseComments)
		if perr != nil {
			skipped = append(skipped, perr.Error())
			return nil
		}
		out = append(out, goFile{path: rel, pkg: filepath.ToSlash(filepath.Dir(rel)), f: f})
		return nil
	})
	slices.SortFunc(out, func(a, b goFile) int { return strings.Compare(a.path, b.path) })
	return out, skipped, err
}

// skipDir reports whether a folder of that name holds no source of the
// module's own.
func skipDir(name string) bool {
	return name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// parserParse parses one file's source, for the checks' own tests.
func parserParse(fset *token.FileSet, src string) (*ast.File, error) {
	return parser.ParseFile(fset, "p.go", src, parser.ParseComments)
}

// parserParseFile parses the file at p with its comments.
func parserParseFile(fset *token.FileSet, p string) (*ast.File, error) {
	return parser.ParseFile(fset, p, nil, parser.ParseComments)
}
