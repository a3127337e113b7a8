package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/rules"
)

// unmarshalParams decodes command params; absent params are an empty
// object (rules.UnmarshalParams).
func unmarshalParams(params []byte, v any) error { return rules.UnmarshalParams(params, v) }

// refusal is the firewall's error answer: it names the method and why.
func refusal(method, why string) relay.Verdict { return rules.Refusal(method, why) }
