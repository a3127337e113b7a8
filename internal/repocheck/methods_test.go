package repocheck

import (
	"fmt"
	"go/ast"
	"go/token"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// cdpMethod matches a CDP method or event name ("Page.navigate") and a
// domain prefix ("Input.").
var cdpMethod = regexp.MustCompile(`^[A-Z][A-Za-z]*\.([a-z][A-Za-z]*)?$`)

// methodTables are the files that are the tables: every decision on an
// agent command that depends on its method is a row of the firewall
// tables, and every browser event a component observes is declared in the
// event table. Everything else asks the tables (a row's Action, Scope,
// Cap, Controls) instead of comparing names.
var methodTables = map[string]string{
	"internal/firewall/": "the firewall tables: the commands' rules, the isolation table, the agent event table",
	"cdpguard/events.go": "the event table: which component observes which browser event",
	"internal/events/":   "the event bus the event table fills (it matches no name itself)",
}

// methodExempt are functions outside the tables that compare method names
// and are not decisions on an agent command, with why.
var methodExempt = map[string]string{
	// Which agent session or target a reply creates is routing: the relay
	// records the new session (or target) as the agent's so that the
	// messages on it reach that agent; the rule on the command was the
	// firewall table's, before it was sent.
	"internal/relay/agent.go:deliverReply": "routing of Target.attachToTarget/attachToBrowserTarget/createTarget replies",
	// The e2e tests' own CDP client waits for Chrome's load event.
	"e2e/cdptest/page.go:Navigate": "a test client waiting for Page.loadEventFired, not the guard",
}

// methodBudget is how many decisions by CDP method name each folder may
// still hold outside the tables and the exemptions: a ratchet. A folder not
// listed may hold none. Lower a figure when a decision moves into a table;
// never raise one: make the decision a table row (or an event declaration)
// instead. Issue 36 asks for at most 15 in all.
var methodBudget = map[string]int{
	"internal/cdpmsg":    2, // Target.attachedToTarget and Target.detachedFromTarget decoded once where events enter (the relay's six session-bookkeeping comparisons read the decoding since)
	"internal/mcpserver": 1, // Guard.requestBlocked, the guard's own event, which cdproto's decoder does not know
	"internal/readpage":  1, // the reader tab's Runtime.evaluate reply
}

// methodBudgetTotal is the sum the budgets may not exceed.
const methodBudgetTotal = 4

// TestNoMethodDecisions fails when a non-test file of the module outside
// the tables decides by a CDP method name beyond its folder's budget: a
// switch case, a comparison, a prefix test, a map key or index, with a
// method string, a constant holding one, or one of cdproto's Command*/Event*
// names. Such a rule belongs in the firewall tables (an agent command) or
// in the event table (cdpguard/events.go, an event), where a reader of
// those files sees every rule.
func TestNoMethodDecisions(t *testing.T) {
	t.Parallel()
	files, fset := moduleFiles(t)
	hits := methodHits(files, fset)
	for k := range methodExempt {
		if !hasFunc(files, k) {
			t.Errorf("methodExempt names %s, which does not exist: drop it", k)
		}
	}
	byPkg := map[string][]string{}
	total := 0
	for _, h := range hits {
		byPkg[h.pkg] = append(byPkg[h.pkg], h.String())
		total++
	}
	for _, pkg := range slices.Sorted(maps.Keys(byPkg)) {
		got := byPkg[pkg]
		if len(got) > methodBudget[pkg] {
			t.Errorf("%s decides by CDP method names %d times, its budget is %d: make each a firewall row (internal/firewall) or an event declaration (cdpguard/events.go):\n\t%s",
				pkg, len(got), methodBudget[pkg], strings.Join(got, "\n\t"))
		} else if len(got) < methodBudget[pkg] {
			t.Logf("%s: %d method decisions, budget %d: lower its budget", pkg, len(got), methodBudget[pkg])
		}
	}
	sum := 0
	for _, n := range methodBudget {
		sum += n
	}
	if sum > methodBudgetTotal {
		t.Errorf("the folders' budgets add up to %d, over the total %d", sum, methodBudgetTotal)
	}
	t.Logf("method decisions outside the tables: %d (budget %d)", total, methodBudgetTotal)
}

// methodHit is one decision by a method name.
type methodHit struct {
	pkg, pos, what string
}

func (h methodHit) String() string { return h.pos + " " + h.what }

// methodHits returns the method-name decisions of files outside the tables
// and the exempt functions.
func methodHits(files []goFile, fset *token.FileSet) []methodHit {
	consts := methodConsts(files)
	var out []methodHit
	for _, gf := range files {
		if inTables(gf.path) {
			continue
		}
		for _, d := range gf.f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && methodExempt[gf.path+":"+fn.Name.Name] != "" {
				continue
			}
			for _, e := range methodDecisions(d, consts[gf.pkg], cdprotoImports(gf.f)) {
				out = append(out, methodHit{pkg: gf.pkg, pos: fset.Position(e.Pos()).String(), what: exprString(e)})
			}
		}
	}
	return out
}

// hasFunc reports whether key ("path:Func") names a function of files.
func hasFunc(files []goFile, key string) bool {
	for _, gf := range files {
		for _, d := range gf.f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && gf.path+":"+fn.Name.Name == key {
				return true
			}
		}
	}
	return false
}

// inTables reports whether path is, or is in a folder of, methodTables.
func inTables(path string) bool {
	for k := range methodTables {
		if path == k || (strings.HasSuffix(k, "/") && strings.HasPrefix(path, k)) {
			return true
		}
	}
	return false
}

// methodConsts returns, per folder, the names of the constants whose value
// is a CDP method name: comparing with one is comparing with the name.
func methodConsts(files []goFile) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, gf := range files {
		ast.Inspect(gf.f, func(n ast.Node) bool {
			g, ok := n.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				return true
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if isMethodLit(v) && i < len(vs.Names) {
						if out[gf.pkg] == nil {
							out[gf.pkg] = map[string]bool{}
						}
						out[gf.pkg][vs.Names[i].Name] = true
					}
				}
			}
			return true
		})
	}
	return out
}

// cdprotoImports returns the names f imports cdproto's packages under.
func cdprotoImports(f *ast.File) map[string]bool {
	out := map[string]bool{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if !strings.HasPrefix(p, "github.com/chromedp/cdproto") {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		out[name] = true
	}
	return out
}

func isMethodLit(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return false
	}
	s, err := strconv.Unquote(lit.Value)
	return err == nil && cdpMethod.MatchString(s)
}

// methodDecisions returns the method names node decides by.
func methodDecisions(node ast.Node, consts, cdproto map[string]bool) []ast.Expr {
	var out []ast.Expr
	check := func(e ast.Expr) {
		switch x := e.(type) {
		case *ast.BasicLit:
			if isMethodLit(x) {
				out = append(out, x)
			}
		case *ast.Ident:
			if consts[x.Name] {
				out = append(out, x)
			}
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && cdproto[id.Name] && (strings.HasPrefix(x.Sel.Name, "Command") || strings.HasPrefix(x.Sel.Name, "Event")) {
				out = append(out, x)
			}
		}
	}
	ast.Inspect(node, func(n ast.Node) bool {
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
		case *ast.IndexExpr:
			check(n.Index)
		case *ast.CompositeLit:
			if _, ok := n.Type.(*ast.MapType); ok {
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						check(kv.Key)
					}
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) == 2 {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "strings" && (sel.Sel.Name == "HasPrefix" || sel.Sel.Name == "CutPrefix" || sel.Sel.Name == "HasSuffix") {
					check(n.Args[1])
				}
			}
		}
		return true
	})
	return out
}

// exprString names a hit in the failure message.
func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.BasicLit:
		return x.Value
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return fmt.Sprintf("%s.%s", x.X.(*ast.Ident).Name, x.Sel.Name)
	}
	return "?"
}

// TestMethodDecisionsFound: the check finds each form it looks for, and no
// call that only sends a method (a check that finds nothing proves
// nothing).
func TestMethodDecisionsFound(t *testing.T) {
	src := `package p
import (
	"strings"
	"github.com/chromedp/cdproto/page"
)
const evNav = "Page.frameNavigated"
var m map[string]int
func f(x string) {
	switch x {
	case "Page.navigate", "other":
	case evNav, page.EventFrameDetached:
	}
	_ = x == "Runtime.evaluate" || "Debugger.enable" != x || strings.HasPrefix(x, "Input.")
	_ = x == "not a method" || x == page.CommandEnable
	_ = map[string]bool{"Target.createTarget": true}
	_ = m["Target.getTargets"]
	g("Target.getTargets", page.CommandEnable) // a call to the browser is not a decision
}`
	fset := token.NewFileSet()
	f, err := parserParse(fset, src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range methodDecisions(f, map[string]bool{"evNav": true}, cdprotoImports(f)) {
		got = append(got, exprString(e))
	}
	want := `"Page.navigate" evNav page.EventFrameDetached "Runtime.evaluate" "Debugger.enable" "Input." page.CommandEnable "Target.createTarget" "Target.getTargets"`
	if strings.Join(got, " ") != want {
		t.Fatalf("found %s\nwant  %s", strings.Join(got, " "), want)
	}
	consts := methodConsts([]goFile{{path: "p/p.go", pkg: "p", f: f}})
	if !consts["p"]["evNav"] {
		t.Errorf("methodConsts = %v, want evNav", consts)
	}
}
