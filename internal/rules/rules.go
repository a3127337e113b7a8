// Package rules is the last stage of the command pipeline
// (cdpguard/pipeline.go): the check or rewrite a command's firewall row
// names (firewall.Rule.Action), applied to one agent command of one user.
// It decides by the row's action, never by a method name; what it needs of
// the guard it takes from Deps, as the components it calls.
package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/chromedp/cdproto/cdp/jsonv2"

	"github.com/cdpguard/cdpguard/internal/admission"
	"github.com/cdpguard/cdpguard/internal/cdpmsg"
	"github.com/cdpguard/cdpguard/internal/clip"
	"github.com/cdpguard/cdpguard/internal/fetchdomain"
	"github.com/cdpguard/cdpguard/internal/files"
	"github.com/cdpguard/cdpguard/internal/firewall"
	"github.com/cdpguard/cdpguard/internal/policy"
	"github.com/cdpguard/cdpguard/internal/relay"
	"github.com/cdpguard/cdpguard/internal/users"
)

// Browser is the guard's browser connection.
type Browser interface {
	Call(ctx context.Context, sessionID, method string, params any) (jsonv2.Value, error)
}

// Policy is the policy in force as it judges an agent's URLs and tells
// them what it is (the guard's groups, session grants and own addresses).
type Policy interface {
	// Decide judges a URL an agent of u names: the policy of u's group,
	// then u's session grants, then the guard's own addresses.
	Decide(u *users.User, url string) policy.Decision
	// View is Guard.getPolicy's answer for u.
	View(u *users.User) any
}

// Agents is the guard's agent connections (internal/admission).
type Agents interface {
	// Notify sends an event to the connections whose user to reports
	// true and that sent Guard.enable.
	Notify(to func(*users.User) bool, method string, params []byte)
}

// Reader answers Guard.read (internal/readpage).
type Reader interface {
	Command(ctx context.Context, cmd relay.Command, owns func(targetID string) bool) relay.Verdict
}

// Dialogs applies the dialog rows (internal/dialogs); target returns the
// command's target.
type Dialogs interface {
	Command(ctx context.Context, owner any, name string, cmd relay.Command, action firewall.Action, target func() string) relay.Verdict
}

// Controls are the human's controls (internal/controls).
type Controls interface {
	// Refusal returns why the controls refuse a command of kind, "" when
	// they do not.
	Refusal(kind firewall.ControlsRule, params []byte) string
}

// Deps are what the rules take from the guard: its components, each built
// before the Stage.
type Deps struct {
	// Browser is the browser connection; nil: none (unit tests).
	Browser Browser
	Policy  Policy
	// Sessions places an agent's sessions (internal/targets.Record).
	Sessions Sessions
	// Agents are told of a refused navigation (Guard.requestBlocked).
	Agents  Agents
	Files   *files.Dirs
	Reader  Reader
	Dialogs Dialogs
	// Controls apply the controls' column (Rule.Controls); nil: off.
	Controls Controls
	// Users lists a user's targets (internal/users.Registry).
	Users Users
	Log   *slog.Logger
}

// Sessions places an agent's sessions.
type Sessions interface {
	// SessionTarget returns the target of an agent's session, or "".
	SessionTarget(ctx context.Context, a *relay.Agent, sessionID string) string
}

// Users is the users registry (internal/users.Registry).
type Users interface {
	// Targets returns u's targets.
	Targets(u *users.User) []string
	// OwnsTarget reports whether u holds targetID.
	OwnsTarget(u *users.User, targetID string) bool
}

// Stage applies a command's row.
type Stage struct{ d Deps }

// New returns the Stage.
func New(d Deps) *Stage { return &Stage{d: d} }

// Apply applies rule, the row named name, to cmd of agent a (st).
func (s *Stage) Apply(ctx context.Context, a *relay.Agent, st *admission.Agent, cmd relay.Command, name string, rule firewall.Rule) relay.Verdict {
	switch rule.Action {
	case firewall.CheckURL, firewall.CheckNavigation:
		u, err := urlParam(cmd.Params)
		if err != nil {
			return Refusal(name, "unreadable params: "+err.Error())
		}
		scheme := firewall.RefusedScheme(u) // read once: the two checks below are on it
		if rule.Action == firewall.CheckNavigation && scheme == "(none)" {
			return relay.Verdict{Refuse: InvalidURL}
		}
		if scheme != "" {
			msg := schemeRefusal(name, scheme, u)
			if rule.Action == firewall.CheckNavigation && !cmd.Browser {
				return s.refusedNavigation(ctx, a, st, cmd, msg)
			}
			return relay.Verdict{Refuse: msg}
		}
	case firewall.CheckPolicy:
		u, err := urlParam(cmd.Params)
		if err != nil {
			return Refusal(name, "unreadable params: "+err.Error())
		}
		if u != "" {
			if d := s.d.Policy.Decide(st.User, u); !d.Allowed {
				return Refusal(name, fmt.Sprintf("%s (%s): %s", d.Reason, clip.String(u), rule.Why))
			}
		}
	case firewall.CheckRedirect:
		return s.checkRedirect(ctx, st, cmd, name, rule)
	case firewall.CheckPermissions:
		if why := firewall.LocalNetworkGrant(cmd.Params); why != "" {
			return Refusal(name, why+": "+rule.Why)
		}
	case firewall.RewriteDownloads:
		return s.d.Files.RewriteDownloads(st.User.Key, cmd)
	case firewall.CheckFiles:
		return s.d.Files.CheckUpload(cmd)
	case firewall.CheckDropFiles:
		return s.d.Files.CheckDrop(cmd)
	case firewall.CheckSizes:
		if why := firewall.SizeRefusal(cmd.Params, rule.Sizes); why != "" {
			return Refusal(name, why+": "+rule.Why)
		}
	case firewall.GuardRead:
		return s.d.Reader.Command(ctx, cmd, func(targetID string) bool { return s.d.Users.OwnsTarget(st.User, targetID) })
	case firewall.GuardPolicy:
		b, err := jsonv2.Marshal(s.d.Policy.View(st.User))
		if err != nil {
			return Refusal(name, err.Error())
		}
		return relay.Verdict{Local: b}
	case firewall.GuardEnable, firewall.GuardDisable:
		st.GuardEvents.Store(rule.Action == firewall.GuardEnable)
		return relay.Verdict{Local: []byte("{}")}
	case firewall.Guard:
		return Refusal(cmd.Method, rule.Why)
	case firewall.DialogsListen, firewall.DialogsUnlisten, firewall.DialogsAnswer, firewall.Detach, firewall.AutoAttach:
		return s.d.Dialogs.Command(ctx, a, a.Name(), cmd, rule.Action, func() string { return s.d.Sessions.SessionTarget(ctx, a, cmd.SessionID) })
	case firewall.CloseOwnTargets:
		s.closeOwnTargets(ctx, st)
		return relay.Verdict{Local: []byte("{}")}
	case firewall.Controls:
		if s.d.Controls == nil {
			break
		}
		if why := s.d.Controls.Refusal(rule.Controls, cmd.Params); why != "" {
			return Refusal(name, why)
		}
	}
	return relay.Verdict{}
}

// closeOwnTargets closes the user's targets: Browser.close from one agent
// must not take the browser down for other users.
func (s *Stage) closeOwnTargets(ctx context.Context, st *admission.Agent) {
	b := s.d.Browser
	if b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, id := range s.d.Users.Targets(st.User) {
		if _, err := b.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": id}); err != nil {
			s.d.Log.Debug("Browser.close: closing target failed", "target", id, "err", err)
		}
	}
}

// checkRedirect applies firewall.CheckRedirect to an agent's own request
// interception: Fetch.continueRequest (or the deprecated
// Network.continueInterceptedRequest) with a url outside the allowlist is
// refused naming the host, and the request it would have continued is
// failed at once with BlockedByClient on the agent's behalf. Refusing alone
// left the request paused for ever: the page's fetch never ended
// (Playwright's route.continue({url}) to a forbidden host).
func (s *Stage) checkRedirect(ctx context.Context, st *admission.Agent, cmd relay.Command, name string, rule firewall.Rule) relay.Verdict {
	var p struct {
		URL            string `json:"url"`
		RequestID      string `json:"requestId"`
		InterceptionID string `json:"interceptionId"`
	}
	if err := UnmarshalParams(cmd.Params, &p); err != nil {
		return Refusal(name, "unreadable params: "+err.Error())
	}
	if p.URL == "" {
		return relay.Verdict{}
	}
	d := s.d.Policy.Decide(st.User, p.URL)
	if d.Allowed {
		return relay.Verdict{}
	}
	failed := "the request was failed (BlockedByClient)"
	if err := s.failPaused(ctx, cmd, p.RequestID, p.InterceptionID); err != nil {
		failed = "failing the request failed: " + err.Error()
	}
	return Refusal(name, fmt.Sprintf("%s (%s): %s; %s", d.Reason, clip.String(p.URL), rule.Why, failed))
}

// notifyBlocked tells the connections of user key that sent Guard.enable
// of a refused request (Guard.requestBlocked).
func (s *Stage) notifyBlocked(key string, b fetchdomain.Block) {
	params, err := jsonv2.Marshal(b)
	if err != nil {
		return
	}
	s.d.Agents.Notify(func(u *users.User) bool { return u.Key == key }, "Guard.requestBlocked", params)
}

// errNoBrowser is returned by failPaused without a browser connection
// (unit tests of the rules).
var errNoBrowser = errors.New("no browser connection")

// failPaused fails the agent's paused request on the agent's own session,
// as the agent would with Fetch.failRequest.
func (s *Stage) failPaused(ctx context.Context, cmd relay.Command, requestID, interceptionID string) error {
	b := s.d.Browser
	if b == nil {
		return errNoBrowser
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	if interceptionID != "" { // Network.continueInterceptedRequest's
		_, err = b.Call(ctx, cmd.SessionID, cmd.Method, map[string]any{"interceptionId": interceptionID, "errorReason": "BlockedByClient"})
	} else {
		_, err = b.Call(ctx, cmd.SessionID, "Fetch.failRequest", map[string]any{"requestId": requestID, "errorReason": "BlockedByClient"})
	}
	if err != nil {
		s.d.Log.Debug("failing an agent's refused redirect failed", "method", cmd.Method, "err", err)
	}
	return err
}

// URLRefusal returns a refusal message for URLs an agent may never open,
// whatever the allowlist says. Network URLs to hosts outside the allowlist
// are not refused here: the Fetch judge answers them with the explanation
// page, which tells the agent what it can reach.
func URLRefusal(method, u string) string {
	if s := firewall.RefusedScheme(u); s != "" {
		return schemeRefusal(method, s, u)
	}
	return ""
}

// schemeRefusal is URLRefusal's message for u, whose scheme s
// (firewall.RefusedScheme) is refused.
func schemeRefusal(method, s, u string) string {
	return cdpmsg.Refusal(method, fmt.Sprintf("scheme %q is never allowed for agents (%s); only http(s), about:, data: and blob: URLs may be opened", s, clip.String(u)))
}

// urlParam reads the url param of a command.
func urlParam(params []byte) (string, error) {
	var p struct {
		URL string `json:"url"`
	}
	err := UnmarshalParams(params, &p)
	return p.URL, err
}

// UnmarshalParams decodes command params; absent params are an empty object.
func UnmarshalParams(params []byte, v any) error {
	if len(params) == 0 {
		return nil
	}
	return jsonv2.Unmarshal(params, v)
}

// Refusal is the firewall's error answer: it names the method and why.
func Refusal(method, why string) relay.Verdict {
	return relay.Verdict{Refuse: cdpmsg.Refusal(method, why)}
}

// InvalidURL is Chrome's own error answer (code -32000) to a Page.navigate
// whose URL has no scheme ("asdfasdf", "example.com/x", "//host/"): Chrome
// refuses it itself, before any policy could, so the guard answers as
// Chrome does rather than as a blocked navigation (Puppeteer's goto
// rejects with this text direct). A URL with a scheme the guard refuses
// (file:, chrome:) stays a blocked navigation.
const InvalidURL = "Cannot navigate to invalid URL"

// blockedErrorText is what Chrome puts in Page.navigate's errorText for a
// navigation a client blocked (net::ERR_BLOCKED_BY_CLIENT, the same a
// Fetch.failRequest with BlockedByClient produces).
const blockedErrorText = "net::ERR_BLOCKED_BY_CLIENT"

// refusedNavigation answers a Page.navigate the firewall refuses the way
// Chrome answers a failed navigation: a normal reply with frameId and
// errorText, not a CDP error, so that clients that read errorText
// (chromedp's RunResponse, Puppeteer's and Playwright's goto) report it as
// they report any blocked navigation. The reason goes to the guard's log
// and to Guard.requestBlocked on the user's own connections.
func (s *Stage) refusedNavigation(ctx context.Context, a *relay.Agent, st *admission.Agent, cmd relay.Command, reason string) relay.Verdict {
	var p struct {
		URL     string `json:"url"`
		FrameID string `json:"frameId"`
	}
	_ = UnmarshalParams(cmd.Params, &p) // the caller has read url already
	frame := p.FrameID
	if frame == "" {
		// A page's main frame id is its target id.
		frame = s.d.Sessions.SessionTarget(ctx, a, cmd.SessionID)
	}
	s.d.Log.Warn("navigation refused", "url", clip.String(p.URL), "reason", reason)
	s.notifyBlocked(st.User.Key, fetchdomain.Block{URL: p.URL, Reason: reason, ResourceType: "Document", FrameID: frame, TopLevel: p.FrameID == ""})
	res, err := jsonv2.Marshal(struct {
		FrameID   string `json:"frameId"`
		ErrorText string `json:"errorText"`
	}{frame, blockedErrorText})
	if err != nil {
		return relay.Verdict{Refuse: reason}
	}
	return relay.Verdict{Local: res}
}
