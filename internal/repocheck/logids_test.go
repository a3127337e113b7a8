package repocheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// clientKeys are the log attributes whose values a client chooses: a user
// key is a request header, and so is a policy group's name.
var clientKeys = map[string]bool{"user": true, "group": true}

// TestLogLinesClipClientIDs: every log call (a Debug, Info, Warn or Error
// method with key-value arguments) that writes a user key or a group name
// writes it through clip.String. A header's length is capped
// (--session-header-max-bytes), but the cap can be switched off, and
// before issue 32 a 900 kB header was written whole into every line: 500
// such users grew the log by 1.35 GB in 16 s.
func TestLogLinesClipClientIDs(t *testing.T) {
	t.Parallel()
	files, fset := moduleFiles(t)
	var bad []string
	for _, gf := range files {
		bad = append(bad, unclippedIDs(gf.f, fset)...)
	}
	for _, b := range bad {
		t.Errorf("%s: a log line quotes a client's id without clip.String", b)
	}
}

// unclippedIDs returns the positions of the log calls in f whose user or
// group attribute is not a clip.String call.
func unclippedIDs(f *ast.File, fset *token.FileSet) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || len(call.Args) < 3 {
			return true
		}
		switch sel.Sel.Name {
		case "Debug", "Info", "Warn", "Error":
		default:
			return true
		}
		for i := 1; i+1 < len(call.Args); i += 2 {
			lit, ok := call.Args[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			key, _ := strconv.Unquote(lit.Value)
			if clientKeys[key] && !isClip(call.Args[i+1]) {
				out = append(out, fset.Position(call.Pos()).String()+" "+key)
			}
		}
		return true
	})
	return out
}

// isClip reports whether e is a call of clip.String.
func isClip(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	s, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := s.X.(*ast.Ident)
	return ok && x.Name == "clip" && s.Sel.Name == "String"
}

// TestUnclippedIDsFound: the check finds an unclipped user and passes a
// clipped one (a check that finds nothing proves nothing).
func TestUnclippedIDsFound(t *testing.T) {
	const src = `package p
func f(log L, user, g string) {
	log.Warn("a", "user", user)
	log.Info("b", "remote", "x", "user", clip.String(user), "group", g)
	log.Debug("c", "user", clip.String(user))
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := unclippedIDs(f, fset)
	if len(got) != 2 || got[0] != "p.go:3:2 user" || got[1] != "p.go:4:2 group" {
		t.Errorf("found %q, want the unclipped user on line 3 and group on line 4", got)
	}
}
