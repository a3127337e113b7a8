package cdpguard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cdpMethod matches a CDP method or event name ("Page.navigate") and a
// domain prefix ("Input.").
var cdpMethod = regexp.MustCompile(`^[A-Z][A-Za-z]*\.([a-z][A-Za-z]*)?$`)

// methodWiring are the files of cdpguard/ allowed to decide by a CDP method
// name: the event wiring. Every decision on an agent command is a row of
// the firewall table (internal/firewall/rules.go) and is read by its
// action; the stages are listed in pipeline.go.
var methodWiring = map[string]bool{"events.go": true}

// TestNoMethodDecisions fails when a non-test file of cdpguard/ outside the
// wiring decides by a CDP method name: a switch case, a comparison or a
// prefix test with a method string. Such a rule belongs in the firewall
// table (an agent command) or in the event bus's declarations (an event),
// where a reader of those files sees every rule.
func TestNoMethodDecisions(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || methodWiring[name] {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, lit := range methodDecisions(f) {
			t.Errorf("%s: decides by the CDP method %s: make it a firewall row (internal/firewall/rules.go) or an event declaration (events.go)", fset.Position(lit.Pos()), lit.Value)
		}
	}
}

// methodDecisions returns the method-name literals f decides by.
func methodDecisions(f *ast.File) []*ast.BasicLit {
	var out []*ast.BasicLit
	check := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil && cdpMethod.MatchString(s) {
				out = append(out, lit)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CaseClause:
			for _, e := range n.List {
				check(e)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				check(n.X)
				check(n.Y)
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) == 2 {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "strings" && (sel.Sel.Name == "HasPrefix" || sel.Sel.Name == "CutPrefix") {
					check(n.Args[1])
				}
			}
		}
		return true
	})
	return out
}

// TestMethodDecisionsFound: the check above finds each form it looks for
// (a check that finds nothing proves nothing).
func TestMethodDecisionsFound(t *testing.T) {
	src := `package p
import "strings"
func f(m string) {
	switch m {
	case "Page.navigate", "other":
	}
	_ = m == "Runtime.evaluate" || "Debugger.enable" != m || strings.HasPrefix(m, "Input.")
	_ = m == "not a method"
	g("Target.getTargets") // a call to the browser is not a decision
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, lit := range methodDecisions(f) {
		got = append(got, lit.Value)
	}
	want := `"Page.navigate" "Runtime.evaluate" "Debugger.enable" "Input."`
	if strings.Join(got, " ") != want {
		t.Fatalf("found %s, want %s", strings.Join(got, " "), want)
	}
}
