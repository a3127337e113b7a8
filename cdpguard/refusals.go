package cdpguard

import (
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/rules"
)

// refusal is the firewall's error answer: it names the method and why.
func refusal(method, why string) relay.Verdict { return rules.Refusal(method, why) }
