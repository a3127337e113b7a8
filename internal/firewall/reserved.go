package firewall

import (
	"strings"

	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// ReservedPrefix starts every name the guard gives its isolated worlds and
// its binding; agents may not use such names.
const ReservedPrefix = "cdpguard_"

// whyReserved is the reason of the RefuseReserved rows.
const whyReserved = "names starting with " + ReservedPrefix + " belong to cdpguard's own isolated worlds and bindings"

// ReservedRefusal returns why a RefuseReserved command is refused, or "":
// one of keys in params is a string starting with ReservedPrefix.
// Page.createIsolatedWorld with a guard world's name returns that world's
// context (Chrome reuses a world by name),
// Page.addScriptToEvaluateOnNewDocument with it would run the agent's code
// there, and Runtime.addBinding/removeBinding with the guard's binding or
// world would replace or drop the binding the controls report a human's
// click through. Params are decoded (a key may be spelt with escapes), and
// params that do not decode strictly (duplicate keys) are refused.
func ReservedRefusal(params []byte, keys []string) string {
	if len(params) == 0 {
		return ""
	}
	var p map[string]any
	if err := jsonv2.Unmarshal(params, &p); err != nil {
		return "unreadable params: " + err.Error()
	}
	for _, k := range keys {
		s, _ := p[k].(string)
		if strings.HasPrefix(s, ReservedPrefix) {
			return k + " " + clip.String(s) + ": " + whyReserved
		}
	}
	return ""
}
