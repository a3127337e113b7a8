package repocheck

import (
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestFigures logs the figures issue 36 asks later work to bring down, so
// that each step can be measured and then ratcheted like the method
// decisions (TestNoMethodDecisions):
//   - function-typed fields in the dependency and option structs of
//     internal/ (a struct named, or ending in, Deps, Options or Config): each
//     is a late-binding closure a reader of a call loses the trail at;
//   - maps keyed by a plain id of a target, session, frame, execution
//     context, page, tab or window outside the page registry
//     (internal/pages) and the relay (its routing), each a copy of a
//     page's state that a page's end must clear by hand.
//
// It logs them (go test -v -run TestFigures ./internal/repocheck/) and
// fails when one is over its budget below: the budgets are a ratchet,
// lowered when work brings a figure down, never raised.
func TestFigures(t *testing.T) {
	t.Parallel()
	files, fset := moduleFiles(t)
	funcs, fields := funcFields(files, fset)
	t.Logf("function-typed fields in Deps/Options/Config structs of internal/: %d (budget %d)", len(funcs), funcFieldBudget)
	for _, f := range fields {
		t.Logf("\t%s", f)
	}
	maps, relay := idMaps(files, fset)
	t.Logf("maps keyed by target/session/frame/context/page/tab/window ids outside internal/pages and internal/relay: %d (budget %d; internal/relay: %d more)", len(maps), idMapBudget, len(relay))
	for _, m := range maps {
		t.Logf("\t%s", m)
	}
	for _, m := range relay {
		t.Logf("\trelay: %s", m)
	}
	if len(funcs) > funcFieldBudget {
		t.Errorf("%d function-typed fields in dependency structs, budget %d: pass the component (a small interface the package declares) instead of a closure (docs/decisions/2026-12-07-components-not-closures.md)", len(funcs), funcFieldBudget)
	}
	if len(maps) > idMapBudget {
		t.Errorf("%d id-keyed maps outside the page registry and the relay, budget %d: keep a page's state on its page (internal/pages Slot, docs/decisions/2026-12-07-page-object.md)", len(maps), idMapBudget)
	}
}

// The figures' budgets on 2026-12-07 (issue 36's targets: 40 and 8).
const (
	funcFieldBudget = 26
	idMapBudget     = 8
)

// depsStruct matches the names of dependency and option structs.
var depsStruct = regexp.MustCompile(`(Deps|Options|Config)$`)

// funcFields returns the function-typed fields of internal/'s dependency
// and option structs: a func literal type, or a named type of the same
// package whose underlying type is a func.
func funcFields(files []goFile, fset *token.FileSet) (names, lines []string) {
	funcTypes := map[string]map[string]bool{} // folder → named func types
	for _, gf := range files {
		for _, d := range gf.f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if _, ok := ts.Type.(*ast.FuncType); ok {
					if funcTypes[gf.pkg] == nil {
						funcTypes[gf.pkg] = map[string]bool{}
					}
					funcTypes[gf.pkg][ts.Name.Name] = true
				}
			}
		}
	}
	for _, gf := range files {
		if !strings.HasPrefix(gf.pkg, "internal/") {
			continue
		}
		ast.Inspect(gf.f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || !depsStruct.MatchString(ts.Name.Name) {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, f := range st.Fields.List {
				isFunc := false
				switch x := f.Type.(type) {
				case *ast.FuncType:
					isFunc = true
				case *ast.Ident:
					isFunc = funcTypes[gf.pkg][x.Name]
				}
				if !isFunc {
					continue
				}
				for _, name := range f.Names {
					names = append(names, gf.pkg+"."+ts.Name.Name+"."+name.Name)
				}
			}
			return true
		})
	}
	// One line per struct, for the log.
	count := map[string]int{}
	var order []string
	for _, n := range names {
		s := n[:strings.LastIndex(n, ".")]
		if count[s] == 0 {
			order = append(order, s)
		}
		count[s]++
	}
	for _, s := range order {
		lines = append(lines, s+": "+strconv.Itoa(count[s]))
	}
	return names, lines
}

// idWords are the words that say a map's key is the id of part of a page.
var idWords = regexp.MustCompile(`(?i)target|session|frame|context|page|tab|window|world`)

// idKey reports whether a map key type can be an id: a string or an
// integer (execution context and window ids), a type of the same package
// (a key struct holding one), or one of cdproto's id types.
func idKey(k ast.Expr) bool {
	switch x := k.(type) {
	case *ast.Ident:
		return x.Name != "bool" && !strings.HasPrefix(x.Name, "float")
	case *ast.SelectorExpr:
		return strings.HasSuffix(x.Sel.Name, "ID")
	}
	return false
}

// idMaps returns the struct fields and package variables of internal/ that
// are maps keyed by an id (idKey) whose name or comment names a target,
// session, frame, context, page, tab, window or world: outside
// internal/pages and internal/relay, and the relay's apart.
func idMaps(files []goFile, fset *token.FileSet) (out, relay []string) {
	for _, gf := range files {
		if !strings.HasPrefix(gf.pkg, "internal/") || gf.pkg == "internal/pages" || gf.pkg == "internal/repocheck" {
			continue
		}
		add := func(pos token.Pos, name string, typ ast.Expr, doc ...*ast.CommentGroup) {
			mt, ok := typ.(*ast.MapType)
			if !ok || !idKey(mt.Key) {
				return
			}
			text := name
			for _, d := range doc {
				if d != nil {
					text += " " + d.Text()
				}
			}
			if !idWords.MatchString(text) {
				return
			}
			line := fset.Position(pos).String() + " " + name
			if gf.pkg == "internal/relay" {
				relay = append(relay, line)
			} else {
				out = append(out, line)
			}
		}
		ast.Inspect(gf.f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncDecl:
				return false // a function's locals hold no page's state
			case *ast.StructType:
				for _, f := range x.Fields.List {
					for _, nm := range f.Names {
						add(nm.Pos(), nm.Name, f.Type, f.Doc, f.Comment)
					}
				}
			case *ast.GenDecl:
				if x.Tok == token.VAR {
					for _, s := range x.Specs {
						vs := s.(*ast.ValueSpec)
						for _, nm := range vs.Names {
							if vs.Type != nil {
								add(nm.Pos(), nm.Name, vs.Type, x.Doc, vs.Doc, vs.Comment)
							}
						}
					}
				}
			}
			return true
		})
	}
	return out, relay
}
