package fetchdomain

import (
	"bytes"
	_ "embed"
	"html/template"
	"net/url"
)

//go:embed explain.html
var explainHTML string

// explainTmpl is parsed once; html/template escapes every field, since the
// blocked URL is chosen by a page or an agent.
var explainTmpl = template.Must(template.New("explain").Parse(explainHTML))

// ExplanationPage renders the page shown for a blocked top-level navigation:
// what was blocked, why, which origins are reachable, and the operator's
// instructions. An agent that reads it learns the whole allowlist at once.
func ExplanationPage(blockedURL, reason string, origins []string, instructions string) []byte {
	host := blockedURL
	if u, err := url.Parse(blockedURL); err == nil && u.Host != "" {
		host = u.Hostname()
	}
	var b bytes.Buffer
	err := explainTmpl.Execute(&b, struct {
		URL, Host, Reason, Instructions string
		Origins                         []string
	}{blockedURL, host, reason, instructions, origins})
	if err != nil {
		return []byte("Blocked by cdpguard.")
	}
	return b.Bytes()
}
