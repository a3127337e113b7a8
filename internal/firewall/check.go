package firewall

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cdpguard/cdpguard/internal/ascii"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// openable are the URL schemes an agent may open: network pages and schemes
// that never touch the network. Anything else (file:, chrome:, devtools:,
// view-source:, javascript:, external protocol handlers such as mailto:) is
// refused: an allowlist, because a denylist misses the next scheme.
var openable = []string{"http", "https", "about", "data", "blob"}

// RefusedScheme returns the scheme of u when an agent may not open it, and
// "" when it may. The scheme is read as the WHATWG URL parser reads it:
// leading and trailing C0 controls and spaces are ignored and tabs and new
// lines removed, so "fi\tle:///etc/passwd" is the file: URL Chrome would
// open. A URL without a scheme is refused as "(none)"; the empty URL (which
// Chrome opens as about:blank) is allowed.
func RefusedScheme(u string) string {
	for len(u) > 0 && u[0] <= ' ' {
		u = u[1:]
	}
	for len(u) > 0 && u[len(u)-1] <= ' ' {
		u = u[:len(u)-1]
	}
	if u == "" {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c == '\t' || c == '\n' || c == '\r':
			continue
		case c == ':':
			s := strings.ToLower(b.String())
			if s == "" {
				return "(none)"
			}
			for _, ok := range openable {
				if s == ok {
					return ""
				}
			}
			return s
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case b.Len() > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "(none)"
		}
		b.WriteByte(c)
	}
	return "(none)"
}

// IsLocalNetworkPermission reports whether a permission name (a CDP
// PermissionType such as "localNetworkAccess", or a Permissions API name
// such as "local-network-access") opens loopback or private addresses to
// pages. Spelling is folded (case, '-' and '_'), so future names of the
// same family ("privateNetworkAccess", "loopback-network") are caught.
func IsLocalNetworkPermission(name string) bool {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '-' || c == '_' || c == ' ' {
			continue
		}
		b.WriteByte(ascii.ToLower(c))
	}
	n := b.String()
	for _, w := range []string{"localnetwork", "loopbacknetwork", "privatenetwork"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// ErrOutsideDir is wrapped by PathError when a path is not inside the
// directory it must be in.
var ErrOutsideDir = errors.New("path is outside the allowed directory")

// PathError says which path was refused and why.
type PathError struct {
	Path string
	Err  error
}

func (e *PathError) Error() string { return fmt.Sprintf("%q: %v", e.Path, e.Err) }
func (e *PathError) Unwrap() error { return e.Err }

// ResolveInside resolves path (which must be absolute) with every symbolic
// link followed and returns the result if it lies inside dir, itself
// resolved the same way. Paths that do not exist are refused: a link could
// be put there later. The caller should use the returned path, not the one
// it was given, so that a link swapped in afterwards is not followed.
func ResolveInside(dir, path string) (string, error) {
	if dir == "" {
		return "", &PathError{Path: path, Err: fmt.Errorf("%w: no upload directory is configured", ErrOutsideDir)}
	}
	if !filepath.IsAbs(path) {
		return "", &PathError{Path: path, Err: fmt.Errorf("%w: not an absolute path", ErrOutsideDir)}
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", &PathError{Path: dir, Err: err}
	}
	if root, err = filepath.Abs(root); err != nil {
		return "", &PathError{Path: dir, Err: err}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", &PathError{Path: path, Err: fmt.Errorf("%w: %w", ErrOutsideDir, err)}
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", &PathError{Path: path, Err: err}
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", &PathError{Path: path, Err: ErrOutsideDir}
	}
	return real, nil
}

// ParamRefusal returns why a command of a RefuseParams row is refused: it
// carries one of r.Params; "" when it carries none.
func ParamRefusal(params []byte, r Rule) string {
	var in map[string]jsonv2.Value
	if len(params) > 0 {
		if err := jsonv2.Unmarshal(params, &in); err != nil {
			return "unreadable params: " + err.Error()
		}
	}
	for _, k := range r.Params {
		if _, ok := in[k]; ok {
			return k + ": " + r.Why
		}
	}
	return ""
}

// LocalNetworkGrant returns why a Browser.grantPermissions or
// Browser.setPermission command (a CheckPermissions row) grants a
// local-network permission, or "". Setting such a permission to "denied"
// only tightens the browser and passes.
func LocalNetworkGrant(params []byte) string {
	var p struct {
		Permissions []string `json:"permissions"`
		Permission  struct {
			Name string `json:"name"`
		} `json:"permission"`
		Setting string `json:"setting"`
	}
	if len(params) > 0 {
		if err := jsonv2.Unmarshal(params, &p); err != nil {
			return "unreadable params: " + err.Error()
		}
	}
	for _, n := range p.Permissions {
		if IsLocalNetworkPermission(n) {
			return fmt.Sprintf("permission %q", n)
		}
	}
	if n := p.Permission.Name; n != "" && IsLocalNetworkPermission(n) && p.Setting != "denied" {
		return fmt.Sprintf("permission %q set to %q", n, p.Setting)
	}
	return ""
}

// RefusesOnItsOwn reports whether row r can be the reason of a refusal
// (the refusal metric's label); the rows that only let the guard follow a
// command (dialogs, attach, detach) never refuse, so their refusals are
// isolation's.
func (r Rule) RefusesOnItsOwn() bool {
	switch r.Action {
	case Pass, DialogsListen, DialogsUnlisten, DialogsAnswer, Detach, AutoAttach, AttachTarget:
		return false
	case Controls:
		return r.Controls.Refuses()
	}
	return true
}

// RefusalLabel returns the label a refused command counts under (the
// refusal metric): its row's name when that row refuses on its own, else
// "isolation" (per-user isolation; the rows that never refuse). Labels
// come from the table only, so the metric's cardinality stays bounded.
func RefusalLabel(method string, browser bool) string {
	rule, name := Lookup(method, browser)
	if name == "" || !rule.RefusesOnItsOwn() {
		return "isolation"
	}
	return name
}
