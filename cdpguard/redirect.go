package cdpguard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/relay"
)

// checkRedirect applies firewall.CheckRedirect to an agent's own request
// interception: Fetch.continueRequest (or the deprecated
// Network.continueInterceptedRequest) with a url outside the allowlist is
// refused naming the host, and the request it would have continued is
// failed at once with BlockedByClient on the agent's behalf. Refusing alone
// left the request paused for ever: the page's fetch never ended
// (Playwright's route.continue({url}) to a forbidden host).
func (g *Guard) checkRedirect(ctx context.Context, st *agentState, cmd relay.Command, name string, rule firewall.Rule) relay.Verdict {
	var p struct {
		URL            string `json:"url"`
		RequestID      string `json:"requestId"`
		InterceptionID string `json:"interceptionId"`
	}
	if err := unmarshalParams(cmd.Params, &p); err != nil {
		return refusal(name, "unreadable params: "+err.Error())
	}
	if p.URL == "" {
		return relay.Verdict{}
	}
	d := g.decideFor(st.User, p.URL)
	if d.Allowed {
		return relay.Verdict{}
	}
	failed := "the request was failed (BlockedByClient)"
	if err := g.failPaused(ctx, cmd, p.RequestID, p.InterceptionID); err != nil {
		failed = "failing the request failed: " + err.Error()
	}
	return refusal(name, fmt.Sprintf("%s (%s): %s; %s", d.Reason, truncateReason(p.URL), rule.Why, failed))
}

// errNoBrowser is returned by failPaused on a guard without a browser
// connection (unit tests of the rules).
var errNoBrowser = errors.New("no browser connection")

// failPaused fails the agent's paused request on the agent's own session,
// as the agent would with Fetch.failRequest.
func (g *Guard) failPaused(ctx context.Context, cmd relay.Command, requestID, interceptionID string) error {
	if g.mux == nil {
		return errNoBrowser
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	if interceptionID != "" { // Network.continueInterceptedRequest's

		_, err = g.mux.Call(ctx, cmd.SessionID, cmd.Method, map[string]any{"interceptionId": interceptionID, "errorReason": "BlockedByClient"})
	} else {
		_, err = g.mux.Call(ctx, cmd.SessionID, "Fetch.failRequest", map[string]any{"requestId": requestID, "errorReason": "BlockedByClient"})
	}
	if err != nil {
		g.log.Debug("failing an agent's refused redirect failed", "method", cmd.Method, "err", err)
	}
	return err
}
