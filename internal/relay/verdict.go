package relay

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
