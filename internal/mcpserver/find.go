package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// findIn are browser_find's arguments, named as @playwright/mcp names them.
type findIn struct {
	Text       string `json:"text,omitempty" jsonschema:"plain text to search for (case-insensitive); give text or regex"`
	Regex      string `json:"regex,omitempty" jsonschema:"a regular expression (case-sensitive; wrap it in slashes for flags, like /error/i)"`
	MaxResults int    `json:"maxResults,omitempty" jsonschema:"at most this many matches (omit for all)"`
	Filename   string `json:"filename,omitempty" jsonschema:"ignored: results are returned inline, never written to files"`
}

// findContext is how many outline lines after a match are shown with it.
const findContext = 2

// jsRegex compiles a JavaScript-style pattern: /body/flags takes the flags
// i, m and s (g, y, u and d change nothing for a line test).
func jsRegex(src string) (*regexp.Regexp, error) {
	body, flags := src, ""
	if i := strings.LastIndex(src, "/"); len(src) > 1 && src[0] == '/' && i > 0 && strings.Trim(src[i+1:], "gimsuyd") == "" {
		body, flags = src[1:i], src[i+1:]
	}
	var set string
	for _, f := range "ims" {
		if strings.ContainsRune(flags, f) {
			set += string(f)
		}
	}
	if set != "" {
		body = "(?" + set + ")" + body
	}
	re, err := regexp.Compile(body)
	if err != nil {
		return nil, fmt.Errorf("regex %q is not a valid regular expression (RE2 syntax: no lookaround or backreferences): %w", clip(src, 100), err)
	}
	return re, nil
}

// toolFind searches the page's outline, as browser_snapshot shows it: each
// match comes under its path from the root (the lines of its ancestors)
// with a few lines after it. It takes a snapshot, so the refs it shows are
// usable.
func (s *Server) toolFind(ctx context.Context, u *user, in findIn) (*mcp.CallToolResult, error) {
	var match func(string) bool
	var query string
	switch {
	case in.Text == "" && in.Regex == "":
		return nil, errors.New(`give "text" or "regex" to search for`)
	case in.Text != "" && in.Regex != "":
		return nil, errors.New(`give only one of "text" or "regex", not both`)
	case in.MaxResults < 0:
		return nil, errors.New(`"maxResults" must be a positive integer`)
	case len(in.Text) > 1000 || len(in.Regex) > 1000:
		return nil, errors.New("the search is longer than 1000 bytes")
	case in.Regex != "":
		re, err := jsRegex(in.Regex)
		if err != nil {
			return nil, err
		}
		match, query = re.MatchString, in.Regex
	default:
		needle := strings.ToLower(in.Text)
		match, query = func(l string) bool { return strings.Contains(strings.ToLower(l), needle) }, fmt.Sprintf("%q", in.Text)
	}
	t, err := u.page(ctx, false)
	if err != nil {
		return nil, err
	}
	out, err := u.takeSnapshot(ctx, t)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var hits []int
	for i, l := range lines {
		if match(strings.TrimLeft(l, " -")) {
			hits = append(hits, i)
		}
	}
	if len(hits) == 0 {
		return textResult(fmt.Sprintf("No matches for %s in the page's outline.", query) + ignoredFile(in.Filename)), nil
	}
	shown := hits
	if in.MaxResults > 0 && len(shown) > in.MaxResults {
		shown = shown[:in.MaxResults]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d match(es) for %s", len(hits), query)
	if len(shown) < len(hits) {
		fmt.Fprintf(&b, ", showing the first %d", len(shown))
	}
	b.WriteString(":\n")
	for k, i := range shown {
		if b.Len() > readSection {
			fmt.Fprintf(&b, "\n(cut at %d characters: %d more match(es) not shown; narrow the search.)", readSection, len(shown)-k)
			break
		}
		fmt.Fprintf(&b, "\n### Match %d\n", k+1)
		for _, a := range ancestors(lines, i) {
			b.WriteString(lines[a] + "\n")
		}
		b.WriteString(lines[i] + "\n")
		ind := indent(lines[i])
		for j := i + 1; j < len(lines) && j <= i+findContext && indent(lines[j]) > ind; j++ {
			b.WriteString(lines[j] + "\n")
		}
	}
	return textResult(strings.TrimRight(b.String(), "\n") + ignoredFile(in.Filename)), nil
}

// ancestors returns the indices of line i's ancestors in an outline (each
// nearest line above with less indentation), root first.
func ancestors(lines []string, i int) []int {
	var out []int
	ind := indent(lines[i])
	for j := i - 1; j >= 0 && ind > 0; j-- {
		if d := indent(lines[j]); d < ind {
			out = append([]int{j}, out...)
			ind = d
		}
	}
	return out
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// elementObject resolves target to its element in the page's main world.
func (u *user) elementObject(ctx context.Context, t *tab, target string) (runtime.RemoteObjectID, error) {
	id, err := u.resolveTarget(ctx, t, target)
	if err != nil {
		return "", err
	}
	obj, err := cdp.Call(ctx, t.s, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id, ObjectGroup: objectGroup})
	if err != nil || obj.Object == nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", goneErr(target)
	}
	return obj.Object.ObjectID, nil
}
