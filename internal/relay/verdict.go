package relay

// This file is what the owner of an agent connection decides about one
// of its commands (Interceptor.Intercept): the command as it sees it, its
// verdict, and two verdicts combined.

// Verdict is what Interceptor.Intercept decides about one agent command. The zero
// Verdict forwards the command unchanged.
type Verdict struct {
	// Refuse, when set, answers the command with a CDP error carrying this
	// message; nothing reaches the browser.
	Refuse string
	// Local, when set, answers the command with this result; nothing reaches
	// the browser.
	Local []byte
	// Params, when set, replaces the command's params.
	Params []byte
	// OnReply, when set, may rewrite the browser's reply.
	OnReply func(result, errRaw []byte) ([]byte, []byte)
	// Method, when set, replaces the command's method; the reply is
	// handled as the reply to Method (e.g. a browser-level session).
	Method string
}

// Command is an agent command as Interceptor.Intercept sees it.
type Command struct {
	Method string
	Params []byte
	// SessionID is the browser session the command goes to; Browser is true
	// when that is one of the agent's browser-level sessions.
	SessionID string
	Browser   bool
}

// Combine returns the verdict of two rules applied in turn to one command:
// first (e.g. per-user isolation) and then second (e.g. the firewall's
// check on the params first produced). A refusal or local answer of first
// ends the command; otherwise second's refusal or local answer does.
// second's params win over first's, since second saw first's. Both reply
// hooks run, innermost first: the browser's reply passes through second's
// hook and then first's, so neither is dropped.
func Combine(first, second Verdict) Verdict {
	if first.Refuse != "" || first.Local != nil {
		return first
	}
	if second.Refuse != "" || second.Local != nil {
		return second
	}
	out := second
	if out.Params == nil {
		out.Params = first.Params
	}
	switch f, s := first.OnReply, second.OnReply; {
	case f == nil:
	case s == nil:
		out.OnReply = f
	default:
		out.OnReply = func(result, errRaw []byte) ([]byte, []byte) {
			return f(s(result, errRaw))
		}
	}
	return out
}
