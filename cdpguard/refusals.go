package cdpguard

import (
	"fmt"

	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/wsagent"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// urlParam reads the url param of a command.
func urlParam(params []byte) (string, error) {
	var p struct {
		URL string `json:"url"`
	}
	err := unmarshalParams(params, &p)
	return p.URL, err
}

// urlRefusal returns a refusal message for URLs an agent may never open,
// whatever the allowlist says. Network URLs to hosts outside the allowlist
// are not refused here: the Fetch judge answers them with the explanation
// page, which tells the agent what it can reach.
func urlRefusal(method, u string) string {
	if s := firewall.RefusedScheme(u); s != "" {
		return cdpmsg.Refusal(method, fmt.Sprintf("scheme %q is never allowed for agents (%s); only http(s), about:, data: and blob: URLs may be opened", s, truncateReason(u)))
	}
	return ""
}

// unmarshalParams decodes command params; absent params are an empty object.
func unmarshalParams(params []byte, v any) error {
	if len(params) == 0 {
		return nil
	}
	return jsonv2.Unmarshal(params, v)
}

// refusal is the firewall's error answer: it names the method and why.
func refusal(method, why string) relay.Verdict {
	return relay.Verdict{Refuse: cdpmsg.Refusal(method, why)}
}

// truncateReason keeps s within a close frame's reason (wsagent).
func truncateReason(s string) string { return wsagent.TruncateReason(s) }
